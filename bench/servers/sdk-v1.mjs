// S1 baseline: the official SDK v1 McpServer over Streamable HTTP (argv[2]: 'stateless' | 'stateful').
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const stateful = process.argv[2] === 'stateful';
function makeServer() {
  const server = new McpServer({ name: 'sdk-bench', version: '1.0.0' });
  server.tool('echo', 'echo', { text: z.string() }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  return server;
}
const sessions = new Map();
const http = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString() || 'null');
  if (!stateful) {
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  const id = req.headers['mcp-session-id'];
  let transport = id === undefined ? undefined : sessions.get(id);
  if (transport === undefined) {
    transport = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, enableJsonResponse: true, onsessioninitialized: (sid) => sessions.set(sid, transport) });
    await makeServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
http.keepAliveTimeout = 60_000;
http.listen(0, '127.0.0.1', () => process.stdout.write(`READY ${http.address().port}\n`));
