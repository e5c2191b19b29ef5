import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer } from './server.js';
import type { TestServer } from './server.js';

const kTimeout = { timeout: 10_000 };

export type ToolResult = Awaited<ReturnType<ClientV1['callTool']>>;

/** A real server (1 HTTP worker, 1 pool thread) with a tools module, and the official SDK v1 client connected to it. */
export interface SdkSession {
  server: TestServer;
  client: ClientV1;
  call(name: string, args?: Record<string, unknown>): Promise<ToolResult>;
  /** Closes the client, then the server; returns the server's log lines (a quiet server has none). */
  close(): Promise<string[]>;
}

export async function serveWithSdkClient(tools: URL, clientName: string): Promise<SdkSession> {
  const server = await startServer({ tools, workers: 1, poolThreads: 1 });
  const client = new ClientV1({ name: clientName, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.address.url)), kTimeout);
  return {
    server,
    client,
    call: (name, args = {}) => client.callTool({ name, arguments: args }, undefined, kTimeout),
    close: async () => {
      await client.close();
      await server.close();
      return server.logs;
    },
  };
}

/** A result's text content, joined. */
export function resultText(r: ToolResult): string {
  return (r.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('');
}
