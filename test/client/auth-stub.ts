/**
 * A scripted MCP resource server on 127.0.0.1 (node:http), for the client's bearer-token tests:
 * it checks `Authorization: Bearer …` on every request and answers the way the MCP authorization
 * spec (RFC 6750 + RFC 9728) says: 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
 * when no token came, plus `error="invalid_token"` when one came and is refused; 403 with
 * `error="insufficient_scope", scope="…"` for the tool `admin`; otherwise a JSON-RPC answer
 * (legacy: initialize + session; 2026-07-28: server/discover), in either era.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the stub saw it. */
export interface SeenRequest {
  httpMethod: string;
  /** The JSON-RPC method (undefined for a DELETE). */
  method: string | undefined;
  authorization: string | undefined;
  /** The request's own id, for matching cancels. */
  id: unknown;
  params: Record<string, unknown> | undefined;
}

export interface AuthStub {
  /** The MCP endpoint, http://127.0.0.1:<port>/mcp */
  readonly url: string;
  /** The resource metadata URL its challenges name. */
  readonly metadata: string;
  readonly seen: SeenRequest[];
  /** Tokens it accepts (change at will). */
  accept: (token: string) => boolean;
  /** 'legacy': server/discover is -32601 and initialize opens a session; 'modern': server/discover answers. */
  era: 'legacy' | 'modern';
  /** Replace the answer to everything (for odd challenges); return true when handled. */
  override: ((req: IncomingMessage, body: Record<string, unknown>, res: ServerResponse) => boolean) | undefined;
  close(): Promise<void>;
}

export const kAdminScopes = 'files:read admin:write';

/** Starts the stub. */
export async function startAuthStub(): Promise<AuthStub> {
  const seen: SeenRequest[] = [];
  /** tools/call `block` answers only when its cancel arrives (or never, in 2026-07-28, where the stream closes). */
  const blocked = new Map<unknown, ServerResponse>();
  let sessions = 0;
  const state: AuthStub = {
    url: '', metadata: '', seen,
    accept: (token) => token === 'good',
    era: 'legacy',
    override: undefined,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (c: string) => { text += c; }).on('end', () => {
      let body: Record<string, unknown> = {};
      try { body = JSON.parse(text) as Record<string, unknown>; } catch { /* a DELETE has none */ }
      const method = typeof body.method === 'string' ? body.method : undefined;
      seen.push({ httpMethod: req.method ?? '', method, authorization: req.headers.authorization, id: body.id, params: body.params as Record<string, unknown> | undefined });
      if (state.override?.(req, body, res) === true) return;
      const authorization = req.headers.authorization;
      if (authorization === undefined) {
        json(res, 401, { error: 'unauthorized' }, { 'www-authenticate': `Bearer resource_metadata="${state.metadata}"` });
        return;
      }
      const token = /^Bearer (\S+)$/.exec(authorization)?.[1];
      if (token === undefined || !state.accept(token)) {
        json(res, 401, { error: 'invalid_token' }, {
          'www-authenticate': `Bearer error="invalid_token", error_description="The access token expired", resource_metadata="${state.metadata}"`,
        });
        return;
      }
      if (req.method === 'DELETE') { res.writeHead(200).end(); return; }
      const params = (body.params ?? {}) as Record<string, unknown>;
      if (method === 'tools/call' && params.name === 'admin') {
        json(res, 403, { error: 'insufficient_scope' }, {
          'www-authenticate': `Bearer error="insufficient_scope", scope="${kAdminScopes}", resource_metadata="${state.metadata}", error_description="needs admin"`,
        });
        return;
      }
      if (body.id === undefined) {
        if (method === 'notifications/cancelled') {
          const held = blocked.get((body.params as { requestId?: unknown }).requestId);
          held?.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: (body.params as { requestId?: unknown }).requestId, error: { code: -32800, message: 'cancelled' } }));
        }
        res.writeHead(202).end();
        return;
      }
      const result = (r: unknown, headers: Record<string, string> = {}) => json(res, 200, { jsonrpc: '2.0', id: body.id, result: r }, headers);
      switch (method) {
        case 'server/discover':
          if (state.era === 'legacy') { json(res, 200, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } }); return; }
          result({ supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'auth-stub', version: '1' } } });
          return;
        case 'initialize':
          result({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'auth-stub', version: '1' } }, { 'mcp-session-id': `s${++sessions}` });
          return;
        case 'tools/list':
          result({ tools: [{ name: 'echo', description: 'Echoes', inputSchema: { type: 'object' } }, { name: 'admin', inputSchema: { type: 'object' } }] });
          return;
        case 'resources/list': result({ resources: [] }); return;
        case 'resources/templates/list': result({ resourceTemplates: [] }); return;
        case 'prompts/list': result({ prompts: [] }); return;
        case 'tools/call':
          if (params.name === 'block') { blocked.set(body.id, res); return; }
          result({ content: [{ type: 'text', text: String((params.arguments as { text?: unknown } | undefined)?.text ?? '') }] });
          return;
        default:
          json(res, 200, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  Object.assign(state, {
    url: `http://127.0.0.1:${port}/mcp`,
    metadata: `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`,
  });
  return state;
}
