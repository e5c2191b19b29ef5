// 2026-07-28 header mirrors, end to end over both adapters: a tools/call of a tool with
// x-mcp-header annotations must carry each present annotated argument in Mcp-Param-{Name}
// (decoded: OWS, canonical base64, fatal UTF-8; compared: string, integer, boolean text), else
// 400 + -32020 naming the header; Mcp-Name is decoded just as strictly and is required for
// tasks/get|update|cancel (= params.taskId). Legacy-era requests carry no such headers.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server, ServerOptions } from '../../src/index.js';
import { Client, HttpClientTransport } from '../../src/client/index.js';
import { headerValue, paramHeaderSpecs } from '../../src/client/param-headers.js';
import { adapters } from '../helpers/adapters.js';
import { post } from '../helpers/http.js';
import { initialize, modernMeta } from '../helpers/server.js';

const geo = defineTool({
  name: 'geo',
  description: 'Echoes its routed arguments.',
  inputSchema: {
    type: 'object',
    properties: {
      region: { type: 'string', 'x-mcp-header': 'Region' },
      count: { type: 'integer', 'x-mcp-header': 'Count' },
      dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
      target: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
      note: { type: 'string' },
    },
  },
  handler: (args) => `ok ${JSON.stringify(args)}`,
});
const echo = defineTool({ name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (a) => String(a.text) });

let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(http: 'uws' | 'node', extra: Partial<ServerOptions> = {}): Promise<string> {
  server = createServer({ tools: [geo, echo], port: 0, http, janitor: false, ...extra }, { log: () => {} });
  return (await server.listen()).url;
}

interface Answer {
  status: number;
  code: number | undefined;
  message: string | undefined;
  text: string | undefined;
}

/** The JSON-RPC answer of a POST, whether it came as JSON or as one SSE event. */
function answerOf(res: { status: number; body: string }): Answer {
  const json = res.body.trimStart().startsWith('{') ? res.body : /^data: (.*)$/m.exec(res.body)?.[1] ?? '{}';
  const body = JSON.parse(json) as { error?: { code: number; message: string }; result?: { content?: { text?: string }[] } };
  return { status: res.status, code: body.error?.code, message: body.error?.message, text: body.result?.content?.[0]?.text };
}

let nextId = 1;
/** A 2026-07-28 request with its standard headers (Mcp-Name from `name` unless overridden). */
async function modern(url: string, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}, name?: string): Promise<Answer> {
  const base: Record<string, string> = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
  if (name !== undefined) base['mcp-name'] = name;
  return answerOf(await post(url, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: modernMeta() } }, { ...base, ...headers }));
}

const call = (url: string, args: Record<string, unknown>, headers: Record<string, string> = {}, name = 'geo') =>
  modern(url, 'tools/call', { name, arguments: args }, headers, name);

const b64 = (bytes: string | Uint8Array) => `=?base64?${Buffer.from(bytes).toString('base64')}?=`;

function expectRefused(a: Answer, header: string): void {
  expect(a.status).toBe(400);
  expect(a.code).toBe(-32020);
  expect(a.message).toContain(header);
}

function expectServed(a: Answer): void {
  expect(a.code).toBeUndefined();
  expect(a.status).toBe(200);
  expect(a.text).toMatch(/^ok /);
}

describe.each(adapters('Mcp-Param-* headers'))('Mcp-Param-* and Mcp-Name over %s', (http) => {
  it('accepts matching headers: literal, case-insensitive names, OWS trimmed, base64 (canonical, UTF-8), integer and boolean text, nested paths', async () => {
    const url = await start(http);
    const cases: Array<[Record<string, unknown>, Record<string, string>]> = [
      [{ region: 'eu-west' }, { 'Mcp-Param-Region': 'eu-west' }],
      [{ region: 'eu-west' }, { 'mcp-param-region': 'eu-west' }],
      [{ region: 'eu-west' }, { 'MCP-PARAM-REGION': 'eu-west' }],
      [{ region: 'eu-west' }, { 'Mcp-Param-Region': '  eu-west\t' }],
      [{ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8=?=' }],
      [{ region: 'Zürich — 東京' }, { 'Mcp-Param-Region': b64('Zürich — 東京') }],
      [{ region: ' padded ' }, { 'Mcp-Param-Region': b64(' padded ') }],
      [{ region: 'SGVsbG8=' }, { 'Mcp-Param-Region': 'SGVsbG8=' }], // no prefix: literal
      [{ region: '=?base64?SGVsbG8=' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8=' }], // no suffix: literal
      [{ count: 42 }, { 'Mcp-Param-Count': '42' }],
      [{ count: -3 }, { 'Mcp-Param-Count': '-3' }],
      [{ dry: true }, { 'Mcp-Param-Dry-Run': 'true' }],
      [{ dry: false }, { 'Mcp-Param-Dry-Run': 'false' }],
      [{ target: { zone: 'a1' } }, { 'Mcp-Param-Zone': 'a1' }],
      [{ region: 'r', count: 1, dry: true, target: { zone: 'z' } }, { 'Mcp-Param-Region': 'r', 'Mcp-Param-Count': '1', 'Mcp-Param-Dry-Run': 'true', 'Mcp-Param-Zone': 'z' }],
      [{ note: 'unannotated' }, {}], // nothing annotated is present: nothing required
      [{}, { 'Mcp-Param-Region': 'ignored', 'Mcp-Param-Count': 'x' }], // headers whose argument is absent are ignored
      [{ region: null }, {}], // null counts as absent
      [{ target: 'not an object' }, {}], // the path does not reach a value (the schema refuses the type)
    ];
    for (const [args, headers] of cases) {
      const a = await call(url, args, headers);
      expect({ args, headers, status: a.status, code: a.code }).toEqual({ args, headers, status: 200, code: undefined });
    }
    expectServed(await call(url, { region: 'eu-west' }, { 'Mcp-Param-Region': 'eu-west' }));
  });

  it('refuses 400 + -32020 naming the header: missing, mismatched, case-different, bad base64 or UTF-8, wrong integer/boolean text', async () => {
    const url = await start(http);
    const cases: Array<[Record<string, unknown>, Record<string, string>, string]> = [
      [{ region: 'eu-west' }, {}, 'Mcp-Param-Region header is required'],
      [{ region: 'eu-west' }, { 'Mcp-Param-Region': 'us-east' }, 'Mcp-Param-Region header does not match'],
      [{ region: 'eu-west' }, { 'Mcp-Param-Region': 'EU-WEST' }, 'does not match'], // values are case-sensitive
      [{ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8?=' }, 'Mcp-Param-Region header is not valid'], // bad padding
      [{ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVs!!!bG8=?=' }, 'is not valid'], // characters outside the alphabet
      [{ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVsbG9=?=' }, 'is not valid'], // non-canonical trailing bits
      [{ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVsbA===?=' }, 'is not valid'], // too much padding
      [{ region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVs_bG8=?=' }, 'is not valid'], // base64url
      [{ region: '\ufffd\ufffd' }, { 'Mcp-Param-Region': b64(new Uint8Array([0xff, 0xfe])) }, 'is not valid'], // invalid UTF-8
      [{ region: 'SGVsbG8=' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8=?=' }, 'does not match'], // decoded, so not the literal
      [{ count: 42 }, {}, 'Mcp-Param-Count header is required'],
      [{ count: 42 }, { 'Mcp-Param-Count': '042' }, 'Mcp-Param-Count header does not match'],
      [{ count: 42 }, { 'Mcp-Param-Count': '42.0' }, 'does not match'],
      [{ count: 2 ** 53 }, { 'Mcp-Param-Count': '9007199254740992' }, 'Mcp-Param-Count cannot be checked: arguments.count is not a JS-safe integer'],
      [{ dry: true }, { 'Mcp-Param-Dry-Run': 'True' }, 'Mcp-Param-Dry-Run header does not match'],
      [{ dry: false }, { 'Mcp-Param-Dry-Run': '0' }, 'does not match'],
      [{ target: { zone: 'a1' } }, {}, 'Mcp-Param-Zone header is required: arguments.target.zone is in the body'],
      [{ region: 'r', count: 1 }, { 'Mcp-Param-Region': 'r' }, 'Mcp-Param-Count header is required'],
    ];
    for (const [args, headers, message] of cases) {
      const a = await call(url, args, headers);
      expect({ args, headers, status: a.status, code: a.code, message: a.message?.includes(message) }).toEqual({ args, headers, status: 400, code: -32020, message: true });
    }
  });

  it('a tool without annotations needs no Mcp-Param-* headers, and ignores any sent', async () => {
    const url = await start(http);
    const a = await call(url, { text: 'hi' }, { 'Mcp-Param-Region': 'whatever' }, 'echo');
    expect([a.status, a.code, a.text]).toEqual([200, undefined, 'hi']);
  });

  it('the legacy era is unaffected: no Mcp-Param-* (or Mcp-Name) headers needed', async () => {
    const url = await start(http, { sessions: true });
    const session = await initialize(url);
    const res = answerOf(await post(url, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'geo', arguments: { region: 'eu-west' } } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }));
    expectServed(res);
  });

  it('an authenticate hook (every header copied) checks the same way', async () => {
    const url = await start(http, { authenticate: () => ({ id: 'p' }) });
    expectServed(await call(url, { region: 'eu-west' }, { 'Mcp-Param-Region': 'eu-west' }));
    expectRefused(await call(url, { region: 'eu-west' }, {}), 'Mcp-Param-Region');
  });

  it('CORS: a preflight asking for Mcp-Param-* headers gets them allowed, and the browser request is checked as any other', async () => {
    const origin = 'https://app.example.com';
    const url = await start(http, { cors: { origins: [origin] } });
    const requested = 'content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region';
    const pre = await new Promise<{ status: number; allow: unknown }>((resolve, reject) => {
      const req = request(url, { method: 'OPTIONS', agent: false, headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': requested } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers['access-control-allow-headers'] }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(pre).toEqual({ status: 204, allow: requested });
    expectServed(await call(url, { region: 'eu-west' }, { origin, 'Mcp-Param-Region': 'eu-west' }));
    expectRefused(await call(url, { region: 'eu-west' }, { origin, 'Mcp-Param-Region': 'eu-east' }), 'Mcp-Param-Region');
  });

  it('Mcp-Name: decoded strictly (canonical base64), OWS trimmed; Mcp-Method OWS trimmed', async () => {
    const url = await start(http);
    const echoCall = (headers: Record<string, string>) => modern(url, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, headers);
    expect((await echoCall({ 'mcp-name': b64('echo') })).text).toBe('hi');
    expect((await echoCall({ 'mcp-name': '  echo  ' })).text).toBe('hi');
    expect((await echoCall({ 'mcp-name': 'echo', 'mcp-method': ' tools/call\t' })).text).toBe('hi');
    expectRefused(await echoCall({ 'mcp-name': '=?base64?ZWNobx==?=' }), 'Mcp-Name header is not valid'); // non-canonical: lenient decoders read "echo"
    expectRefused(await echoCall({ 'mcp-name': '=?base64?ZWNobw?=' }), 'Mcp-Name header is not valid'); // no padding
    expectRefused(await echoCall({ 'mcp-name': 'Echo' }), 'Mcp-Name header does not match');
    expectRefused(await echoCall({}), 'Mcp-Name header is required');
  });

  it.each(['tasks/get', 'tasks/update', 'tasks/cancel'])('%s needs Mcp-Name = params.taskId (then goes on to the engine)', async (method) => {
    const url = await start(http);
    const params = { taskId: 'task-123', inputResponses: {} };
    expectRefused(await modern(url, method, params), 'Mcp-Name header is required');
    expectRefused(await modern(url, method, params, {}, 'task-999'), 'Mcp-Name header does not match');
    expectRefused(await modern(url, method, params, {}, '=?base64?dGFzay0xMjM?='), 'Mcp-Name header is not valid');
    // Past the header rules the engine answers (an unknown task, or 404 where tasks are not served).
    const matched = await modern(url, method, params, {}, 'task-123');
    expect(matched.code).not.toBe(-32020);
    const encoded = await modern(url, method, params, {}, b64('task-123'));
    expect(encoded.code).not.toBe(-32020);
  });

  it('the Sluice client sends Mcp-Param-* for tools it has listed (base64 where a value is not header-safe)', async () => {
    const url = await start(http);
    const client = new Client(new HttpClientTransport({ url }), { era: 'modern' });
    try {
      await client.listTools();
      const args = { region: ' Zürich ', count: 7, dry: false, target: { zone: 'z1' }, note: 'n' };
      const result = await client.callTool('geo', args);
      expect(result.content).toEqual([{ type: 'text', text: `ok ${JSON.stringify(args)}` }]);
    } finally {
      await client.close();
    }
  });
});

describe('the client side of x-mcp-header', () => {
  it('learns annotations through properties only, and none from a tool whose annotations break the rules', () => {
    expect(paramHeaderSpecs(geo.inputSchema)).toEqual([['Region', ['region']], ['Count', ['count']], ['Dry-Run', ['dry']], ['Zone', ['target', 'zone']]]);
    expect(paramHeaderSpecs({ type: 'object', properties: { a: { type: 'string' } } })).toBeUndefined();
    expect(paramHeaderSpecs({ type: 'object', properties: { a: { type: 'number', 'x-mcp-header': 'A' } } })).toBeUndefined();
    expect(paramHeaderSpecs({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'string', 'x-mcp-header': 'a' } } })).toBeUndefined();
  });

  it('encodes values that are not header-safe as =?base64?…?=', () => {
    expect(headerValue('eu-west')).toBe('eu-west');
    expect(headerValue('a b')).toBe('a b');
    expect(headerValue('')).toBe('');
    expect(headerValue(' a')).toBe(`=?base64?${Buffer.from(' a').toString('base64')}?=`);
    expect(headerValue('Zürich')).toBe(`=?base64?${Buffer.from('Zürich').toString('base64')}?=`);
  });
});
