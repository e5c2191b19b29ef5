// S1 baseline: the official SDK v2 McpServer behind its per-request handler (createMcpHandler,
// 2026-07-28), mounted on node:http the way a Node adapter must (the Request's signal aborts when
// the connection closes early).
import { createServer } from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'sdk-v2-bench', version: '2.4.0' });
  server.registerTool('echo', { description: 'echo', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  return server;
});
const http = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const disconnected = new AbortController();
  res.on('close', () => { if (!res.writableFinished) disconnected.abort(); });
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  const response = await handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: req.method === 'POST' ? Buffer.concat(chunks) : undefined, signal: disconnected.signal }));
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  res.end(response.body === null ? undefined : Buffer.from(await response.arrayBuffer()));
});
http.keepAliveTimeout = 60_000;
http.listen(0, '127.0.0.1', () => process.stdout.write(`READY ${http.address().port}\n`));
