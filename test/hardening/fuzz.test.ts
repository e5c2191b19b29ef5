// Hardening: property-based fuzzing of both transports with fast-check. Generated JSON-RPC messages,
// from valid-ish to garbage (random methods, ids of every JSON type, __proto__/constructor keys,
// deep nesting, huge numbers, broken UTF-8, random MCP headers), are sent one at a time to one
// HTTP server and one stdio server. Every answer must be well formed (HTTP: status < 500 and an empty
// body or JSON-RPC; stdio: every line JSON-RPC), and a normal echo must still work afterwards.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveStdioServer } from '../../src/index.js';
import { initialize, kAccept, kToolsModule, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

// ---------------------------------------------------------------------------------------------
// Unhandled rejections in this process (vitest reports them too; this makes the check explicit).

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => { unhandled.push(reason); };
beforeAll(() => { process.on('unhandledRejection', onUnhandled); });
afterAll(() => { process.off('unhandledRejection', onUnhandled); });

// ---------------------------------------------------------------------------------------------
// Generators. Messages are built as JSON *text*, so keys JSON.stringify would never write
// (__proto__ as an own key, duplicates) and numbers it cannot (1e400, 2**70) are possible.

const hostileKeys = [
  '__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', '__defineGetter__', 'then',
  '_meta', 'name', 'arguments', 'uri', 'requestId', 'reason', 'progressToken', 'text', 'cursor', 'level', 'ref',
  'argument', 'capabilities', 'protocolVersion', 'notifications', 'inputResponses', 'requestState',
  'io.modelcontextprotocol/protocolVersion', 'io.modelcontextprotocol/clientCapabilities', 'io.modelcontextprotocol/logLevel',
];
const key = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...hostileKeys) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
);
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.constantFrom('1e400', '-1e400', '1e-400', '-0', '0.0', '9007199254740993', '123456789012345678901234567890', '1E+2', '-9007199254740992', '4294967296', '1.5', '0.1e1'),
  fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map(String),
);
const stringText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 10 }), // lone surrogates included: JSON.stringify escapes them
  fc.constantFrom('', '\u0000', '\ud800', '\udc00x', '\u2028', '\u202e', 'é', '💥', '=?base64?/w==?=', 'x'.repeat(300)),
).map((s) => JSON.stringify(s));
const leaf = fc.oneof(numberText, stringText, fc.constantFrom('true', 'false', 'null'));
const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }).map((xs) => `[${(xs as string[]).join(',')}]`),
  object: fc.array(fc.tuple(key, tie('value')), { maxLength: 5 }).map((es) => `{${(es as [string, string][]).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
})) as { value: fc.Arbitrary<string> };
/** Nesting far deeper than any real message: arrays or objects, 100 to 6000 levels. */
const deep = fc.tuple(fc.integer({ min: 100, max: 6_000 }), fc.boolean()).map(([n, arrays]) => (arrays ? `${'['.repeat(n)}${']'.repeat(n)}` : `${'{"a":'.repeat(n)}0${'}'.repeat(n)}`));
const anyValue = fc.oneof({ weight: 8, arbitrary: value }, { weight: 1, arbitrary: deep });

const obj = (entries: readonly (readonly [string, string | undefined])[]) => `{${entries.filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
const maybe = <T>(arb: fc.Arbitrary<T>, weight = 3) => fc.oneof({ weight, arbitrary: arb }, { weight: 1, arbitrary: fc.constant(undefined) });

const idText = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -1_000_000, max: 1_000_000 }).map(String) },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }).map((s) => JSON.stringify(s)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('0', '-0', '9007199254740991', '-9007199254740991', '9007199254740992', '1e400', '1.5', 'null', 'true', '{}', '[]', '[1]', '""', '"__proto__"', '"constructor"', JSON.stringify('x'.repeat(256)), JSON.stringify('x'.repeat(257)), JSON.stringify('€'.repeat(86))),
  },
  { weight: 1, arbitrary: value },
);

const knownMethods = [
  'initialize', 'ping', 'tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list',
  'prompts/get', 'completion/complete', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'server/discover',
  'subscriptions/listen', 'notifications/cancelled', 'notifications/initialized', 'notifications/progress', 'notifications/roots/list_changed',
];
const method = fc.oneof(
  { weight: 5, arbitrary: fc.constant('tools/call') },
  { weight: 2, arbitrary: fc.constant('notifications/cancelled') },
  { weight: 8, arbitrary: fc.constantFrom(...knownMethods) },
  { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'x'.repeat(257), 'TOOLS/CALL', 'tools/call ', 'notifications/', 'rpc.discover') },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

// Tools that end at once whatever their arguments (block, stubborn, spin, hog default to 10 s, ask
// waits for the client, crash ends its thread: those are other tests' business). two_rounds no
// longer does: a legacy-era call of it asks the client mid-call (a 2026-07-28 one whose _meta the
// generator left out is legacy too), a generated response naming the server's request id may
// answer, and its second round then runs until cancelled. Its rounds are tested in features.test
// and legacy-input.test.
const toolName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('echo', 'whoami', 'chatty', 'change_tools') },
  { weight: 1, arbitrary: fc.constantFrom('nope', '__proto__', 'constructor', '', 'ECHO', 'echo\u0000') },
);
const versions = ['2025-11-25', '2025-06-18', '2025-03-26', '2026-07-28'];
const version = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...versions) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) });
/**
 * How a case is shaped: 'legacy' and 'modern' keep the headers and _meta of their era coherent, so
 * that most cases get past the HTTP checks into the protocol; 'wild' draws everything at random.
 */
type Mode = 'legacy' | 'modern' | 'wild';
const mode: fc.Arbitrary<Mode> = fc.constantFrom<Mode>('legacy', 'legacy', 'legacy', 'modern', 'modern', 'modern', 'wild');

const meta = (m: Mode) => fc.record({
  progressToken: maybe(fc.oneof(stringText, numberText, value), 1),
  protocolVersion: m === 'modern' ? fc.oneof({ weight: 12, arbitrary: fc.constant('"2026-07-28"') }, { weight: 1, arbitrary: value })
    : m === 'legacy' ? fc.constant(undefined) : maybe(fc.oneof(version.map((v) => JSON.stringify(v)), value), 1),
  capabilities: m === 'modern' ? fc.oneof({ weight: 10, arbitrary: fc.constantFrom('{}', '{"elicitation":{}}', '{"sampling":{},"roots":{}}') }, { weight: 1, arbitrary: value })
    : maybe(fc.oneof(fc.constantFrom('{}', '{"elicitation":{}}', '{"sampling":{},"roots":{}}'), value), 1),
  logLevel: maybe(fc.oneof(fc.constantFrom('"debug"', '"error"', '"emergency"'), value), 1),
  proto: maybe(value, 1),
}).map((x) => obj([
  ['progressToken', x.progressToken], ['io.modelcontextprotocol/protocolVersion', x.protocolVersion],
  ['io.modelcontextprotocol/clientCapabilities', x.capabilities], ['io.modelcontextprotocol/logLevel', x.logLevel], ['__proto__', x.proto],
]));

/** Params that look like what the method expects, with holes and hostile values. */
function paramsFor(m: string, md: Mode): fc.Arbitrary<{ text: string; name?: string }> {
  // The modern era needs _meta on every request; elsewhere it is optional.
  const metaText = md === 'modern' ? fc.oneof({ weight: 12, arbitrary: meta(md) }, { weight: 1, arbitrary: fc.constant(undefined) }) : maybe(meta(md), 1);
  const withMeta = (entries: fc.Arbitrary<[string, string | undefined][]>, name?: fc.Arbitrary<string | undefined>) =>
    fc.tuple(entries, metaText, name ?? fc.constant(undefined)).map(([es, mt, n]) => ({ text: obj([...es, ['_meta', mt]]), name: n }));
  switch (m) {
    case 'tools/call':
      return fc.tuple(toolName, maybe(fc.oneof(
        fc.record({ text: maybe(fc.oneof(stringText, value)), extra: maybe(anyValue, 1), proto: maybe(value, 1) }).map((a) => obj([['text', a.text], ['x', a.extra], ['__proto__', a.proto]])),
        anyValue,
      )), maybe(fc.oneof(value, fc.constant('{"name":"x"}')), 1)).chain(([name, args, inputs]) =>
        withMeta(fc.constant([['name', JSON.stringify(name)], ['arguments', args], ['inputResponses', inputs]]), fc.constant(name)));
    case 'resources/read':
      return fc.constantFrom('docs://x', 'test://nope', 'users://1/profile', '', '%', '__proto__').chain((uri) =>
        withMeta(fc.constant([['uri', JSON.stringify(uri)]]), fc.constant(uri)));
    case 'prompts/get':
      return fc.tuple(fc.constantFrom('nope', '__proto__', ''), maybe(value)).chain(([name, args]) =>
        withMeta(fc.constant([['name', JSON.stringify(name)], ['arguments', args]]), fc.constant(name)));
    case 'completion/complete':
      return withMeta(fc.tuple(
        fc.oneof(fc.constantFrom('{"type":"ref/prompt","name":"slow_prompt"}', '{"type":"ref/resource","uri":"test://slow"}', '{"type":"ref/prompt","name":"nope"}'), value),
        fc.oneof(fc.constantFrom('{"name":"record","value":""}', '{"name":"x","value":"y"}'), value),
      ).map(([ref, argument]) => [['ref', ref], ['argument', argument]]));
    case 'logging/setLevel':
      return withMeta(fc.oneof(fc.constantFrom('"debug"', '"info"', '"emergency"', '"DEBUG"'), value).map((level) => [['level', level]]));
    case 'notifications/cancelled':
      return withMeta(fc.tuple(idText, maybe(fc.oneof(stringText, value))).map(([requestId, reason]) => [['requestId', requestId], ['reason', reason]]));
    case 'subscriptions/listen':
      return withMeta(fc.oneof(fc.constantFrom('{"toolsListChanged":true}', '{"promptsListChanged":true,"resourcesListChanged":true}', '{}'), value).map((n) => [['notifications', n]]));
    case 'initialize':
      return withMeta(fc.tuple(maybe(version.map((v) => JSON.stringify(v))), maybe(fc.oneof(fc.constantFrom('{}', '{"elicitation":{}}'), value))).map(([v, caps]) => [
        ['protocolVersion', v], ['capabilities', caps], ['clientInfo', '{"name":"fuzz","version":"1"}'],
      ]));
    case 'resources/list': case 'tools/list': case 'prompts/list': case 'resources/templates/list':
      return withMeta(maybe(fc.oneof(fc.constantFrom('"bzA="', '"AAAA"', '"b2-1"'), value)).map((cursor) => [['cursor', cursor]]));
    default:
      return withMeta(fc.array(fc.tuple(key, value), { maxLength: 3 }));
  }
}

interface Generated {
  /** The body bytes (possibly broken UTF-8 or cut short). */
  body: Buffer;
  method: string | undefined;
  /** What the request names (tool, prompt or resource), for a coherent Mcp-Name. */
  name: string | undefined;
}

/** A request, notification or response as JSON text; sometimes broken afterwards. */
const message = (md: Mode): fc.Arbitrary<Generated> => fc.oneof(
  // Requests and notifications.
  {
    weight: 10,
    arbitrary: method.chain((m) => fc.record({
      jsonrpc: fc.oneof({ weight: 20, arbitrary: fc.constant('"2.0"') }, { weight: 1, arbitrary: fc.constantFrom('"1.0"', '2', 'null', '"2.0 "') }, { weight: 1, arbitrary: fc.constant(undefined) }),
      id: fc.oneof({ weight: 4, arbitrary: idText }, { weight: 1, arbitrary: fc.constant(undefined) }),
      params: fc.oneof({ weight: 12, arbitrary: paramsFor(m, md) }, { weight: 1, arbitrary: anyValue.map((text) => ({ text, name: undefined })) }, { weight: 1, arbitrary: fc.constant(undefined) }),
      methodText: fc.oneof({ weight: 20, arbitrary: fc.constant(JSON.stringify(m)) }, { weight: 1, arbitrary: value }, { weight: 1, arbitrary: fc.constant(undefined) }),
      extra: maybe(fc.tuple(key, value), 1),
    }).map((r) => ({
      text: obj([['jsonrpc', r.jsonrpc], ['id', r.id], ['method', r.methodText], ['params', r.params?.text], ...(r.extra === undefined ? [] : [r.extra])]),
      method: m,
      name: r.params?.name,
    }))),
  },
  // Responses from the client, some naming requests of this server's threads (`s<threadId>-<n>`).
  // KNOWN BUG (see the test at the end): a response whose result is nested ~2000-3000 deep and
  // names another worker thread aborts the whole server process, so results here are never deep.
  {
    weight: 2,
    arbitrary: fc.record({
      id: fc.oneof(idText, fc.tuple(fc.integer({ min: 0, max: 8 }), fc.nat(20)).map(([t, n]) => JSON.stringify(`s${t}-${n}`))),
      result: maybe(value),
      error: maybe(fc.oneof(fc.constant('{"code":-1,"message":"no"}'), value), 1),
      params: md === 'modern' ? maybe(meta(md).map((mt) => `{"_meta":${mt}}`), 3) : fc.constant(undefined),
    }).map((r) => ({ text: obj([['jsonrpc', '"2.0"'], ['id', r.id], ['result', r.result], ['error', r.error], ['params', r.params]]), method: undefined, name: undefined })),
  },
  // Not an object at all.
  { weight: 1, arbitrary: anyValue.map((text) => ({ text, method: undefined, name: undefined })) },
).chain((g) => fc.oneof(
  { weight: md === 'wild' ? 6 : 30, arbitrary: fc.constant(Buffer.from(g.text, 'utf8')) },
  // Broken UTF-8 spliced in somewhere.
  {
    weight: 2,
    arbitrary: fc.tuple(fc.nat(), fc.constantFrom([0xff], [0xc0, 0xaf], [0x80], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xfe, 0xff])).map(([at, bytes]) => {
      const b = Buffer.from(g.text, 'utf8');
      const i = at % (b.length + 1);
      return Buffer.concat([b.subarray(0, i), Buffer.from(bytes), b.subarray(i)]);
    }),
  },
  // Cut short, or followed by garbage.
  { weight: 1, arbitrary: fc.nat().map((at) => Buffer.from(g.text, 'utf8').subarray(0, at % (Buffer.byteLength(g.text) + 1))) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 16 }).map((junk) => Buffer.concat([Buffer.from(g.text, 'utf8'), Buffer.from(junk)])) },
  // Random bytes.
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
).map((body) => ({ body, method: g.method, name: g.name })));

/** Header values Node's client will send: tab, visible ASCII and obs-text (0x80-0xff). */
const headerValue = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }), fc.constant(9)).map((c) => String.fromCharCode(c)),
  maxLength: 40,
});
/** Mostly `usual`; now and then something odd, a random value, or nothing. */
const mostly = <T>(usual: fc.Arbitrary<T>, odd: readonly string[], usualWeight: number) => fc.oneof(
  { weight: usualWeight, arbitrary: usual as fc.Arbitrary<T | string | undefined> },
  { weight: 1, arbitrary: odd.length > 0 ? fc.constantFrom(...odd) : headerValue },
  { weight: 1, arbitrary: headerValue },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

interface HeaderPlan {
  contentType: string | undefined;
  accept: string | undefined;
  version: string | undefined;
  /** 'coherent': derived from the body (the 2026-07-28 rules), else a value or absent. */
  mcpMethod: string | undefined;
  mcpName: string | undefined;
  session: string | undefined;
  origin: string | undefined;
  verb: string;
}

const headerPlan = (md: Mode): fc.Arbitrary<HeaderPlan> => {
  const w = md === 'wild' ? 2 : 80;
  return fc.record({
    contentType: mostly(fc.oneof({ weight: 5, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'APPLICATION/JSON') }),
      ['text/plain', 'application/jsonp', '', 'multipart/form-data; boundary=application/json'], w),
    accept: mostly(fc.constantFrom(kAccept, kAccept, 'application/json', 'text/event-stream', '*/*', 'application/*', 'text/*'),
      ['text/html', 'application/json;q=0', 'text/event-stream;q=0, application/json'], w),
    version: md === 'modern' ? mostly(fc.constant('2026-07-28'), versions, w)
      : md === 'legacy' ? fc.oneof({ weight: w, arbitrary: fc.constantFrom<string | undefined>(undefined, '2025-11-25', '2025-06-18', '2025-03-26') }, { weight: 1, arbitrary: fc.constant('2026-07-28') }, { weight: 1, arbitrary: headerValue })
        : mostly(fc.constantFrom(...versions), [], 1),
    mcpMethod: md === 'legacy' ? fc.oneof({ weight: w, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant('coherent') }) : mostly(fc.constant('coherent'), ['TOOLS/CALL', 'tools/call'], md === 'modern' ? w : 2),
    mcpName: md === 'legacy' ? fc.constant(undefined)
      : mostly(fc.constantFrom('coherent', 'coherent', 'coherent-base64'), ['=?base64?/w==?=', '=?base64?ZWNobw==?=', '=?base64??='], md === 'modern' ? w : 2),
    session: md === 'legacy' ? mostly(fc.constant('valid'), ['0'.repeat(32), 'valid'], w) : fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constant('valid') }, { weight: 1, arbitrary: headerValue }),
    origin: fc.oneof({ weight: md === 'wild' ? 4 : 150, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('http://localhost:1', 'http://evil.example', 'null') }, { weight: 1, arbitrary: headerValue }),
    verb: fc.oneof({ weight: 40, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS') }),
  }) as fc.Arbitrary<HeaderPlan>;
};

const httpCase = mode.chain((md) => fc.tuple(fc.constant(md), message(md), headerPlan(md)));

// ---------------------------------------------------------------------------------------------
// Checks

type Json = Record<string, unknown>;

function isJsonRpcResponse(m: unknown): m is Json {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return false;
  const r = m as Json;
  if (r.jsonrpc !== '2.0' || !Object.hasOwn(r, 'id')) return false;
  if (!(r.id === null || typeof r.id === 'string' || (typeof r.id === 'number' && Number.isSafeInteger(r.id)))) return false;
  const hasResult = Object.hasOwn(r, 'result');
  const hasError = Object.hasOwn(r, 'error');
  if (hasResult === hasError) return false;
  if (hasError) {
    const e = r.error as Json;
    return e !== null && typeof e === 'object' && Number.isInteger(e.code) && typeof e.message === 'string';
  }
  return true;
}

/** A server-to-client notification or request (on an SSE stream or a stdio line). */
function isJsonRpcOutgoing(m: unknown): boolean {
  if (m === null || typeof m !== 'object' || Array.isArray(m)) return false;
  const r = m as Json;
  return r.jsonrpc === '2.0' && typeof r.method === 'string' && (!Object.hasOwn(r, 'id') || typeof r.id === 'string' || typeof r.id === 'number');
}

/** The id a response to these bytes may carry besides null: the message's own, if it parses to one. */
function sentId(body: Buffer): unknown {
  try {
    const v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json).id : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

interface HttpOutcome {
  status: number;
  contentType: string | undefined;
  body: string;
  /** The stream was still open when we stopped reading (a subscriptions/listen stream). */
  heldOpen: boolean;
  /** The serving thread (`sluice-worker` header). */
  worker: string | undefined;
}

function send(target: string, verb: string, headers: Record<string, string>, body: Buffer, agent: Agent): Promise<HttpOutcome> {
  return new Promise((resolve, reject) => {
    const req = request(target, { method: verb, agent, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      let text = '';
      const contentType = res.headers['content-type'];
      const worker = res.headers['sluice-worker'] as string | undefined;
      const done = (heldOpen: boolean) => { clearTimeout(timer); resolve({ status: res.statusCode ?? 0, contentType, body: text, heldOpen, worker }); };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        // A 2026-07-28 subscriptions/listen stream stays open by design: read its first event, then leave.
        if (contentType?.startsWith('text/event-stream') && text.includes('notifications/subscriptions/acknowledged') && text.includes('\n\n')) {
          req.destroy();
          done(true);
        }
      });
      res.on('end', () => done(false));
      res.on('error', () => { /* destroyed by us, or reported by 'end' missing */ });
    });
    const timer = setTimeout(() => { req.destroy(); reject(new Error('no complete answer within 5 s')); }, 5_000);
    req.on('error', (error) => { clearTimeout(timer); reject(error); });
    req.end(body);
  });
}

function checkHttp(outcome: HttpOutcome, sent: Buffer, method: string | undefined): void {
  const { status, body, contentType } = outcome;
  expect(status, body).toBeGreaterThanOrEqual(200);
  expect(status, body).toBeLessThan(500);
  if (body === '') return;
  const own = sentId(sent);
  const idOk = (id: unknown) => id === null || id === own;
  if (contentType?.startsWith('text/event-stream')) {
    const events = body.split('\n\n').filter((e) => e.trim() !== '');
    const messages = events.map((e) => {
      const data = e.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return JSON.parse(data) as unknown;
    });
    expect(messages.length).toBeGreaterThan(0);
    if (outcome.heldOpen) {
      expect(method).toBe('subscriptions/listen');
      expect(messages.every(isJsonRpcOutgoing)).toBe(true);
      return;
    }
    // Notifications first, then the response (a stream ends with it).
    const last = messages.at(-1);
    expect(isJsonRpcResponse(last), JSON.stringify(last)).toBe(true);
    expect(idOk((last as Json).id)).toBe(true);
    for (const m of messages.slice(0, -1)) expect(isJsonRpcOutgoing(m), JSON.stringify(m)).toBe(true);
    return;
  }
  expect(contentType).toMatch(/^application\/json/);
  const parsed = JSON.parse(body) as unknown;
  expect(isJsonRpcResponse(parsed), body).toBe(true);
  expect(idOk((parsed as Json).id), `${body} for a message whose id is ${typeof own === 'object' && own !== null ? 'an object' : JSON.stringify(own)}`).toBe(true);
}

describe('HTTP: generated messages and headers', () => {
  let ts: TestServer;
  let url: string;
  let session: string;

  beforeAll(async () => {
    ts = await startServer({ maxBodyBytes: 256 * 1024 });
    url = ts.address.url;
    session = await initialize(url);
  });

  afterAll(async () => {
    await ts?.close();
  });

  it('every reply is < 500 and empty or JSON-RPC; the server serves normally afterwards', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const statuses = new Map<number, number>();
    const modes = new Map<Mode, number>();
    try {
      await fc.assert(fc.asyncProperty(httpCase, async ([md, g, h]) => {
        const headers: Record<string, string> = {};
        if (h.contentType !== undefined) headers['content-type'] = h.contentType;
        if (h.accept !== undefined) headers.accept = h.accept;
        if (h.version !== undefined) headers['mcp-protocol-version'] = h.version;
        if (h.mcpMethod === 'coherent') { if (g.method !== undefined) headers['mcp-method'] = g.method.replace(/[^\t\x20-\x7e]/g, '?'); } else if (h.mcpMethod !== undefined) headers['mcp-method'] = h.mcpMethod;
        if (h.mcpName === 'coherent' || h.mcpName === 'coherent-base64') {
          if (g.name !== undefined) headers['mcp-name'] = h.mcpName === 'coherent' && /^[\x20-\x7e]*$/.test(g.name) ? g.name : `=?base64?${Buffer.from(g.name).toString('base64')}?=`;
        } else if (h.mcpName !== undefined) headers['mcp-name'] = h.mcpName;
        if (h.session === 'valid') headers['mcp-session-id'] = session;
        else if (h.session !== undefined) headers['mcp-session-id'] = h.session;
        if (h.origin !== undefined) headers.origin = h.origin;
        modes.set(md, (modes.get(md) ?? 0) + 1);
        const outcome = await send(url, h.verb, headers, g.body, agent);
        statuses.set(outcome.status, (statuses.get(outcome.status) ?? 0) + 1);
        // FUZZ_DEBUG=<file>: one line per case (mode, status, start of the body), to see what the runs reach.
        if (process.env.FUZZ_DEBUG !== undefined) appendFileSync(process.env.FUZZ_DEBUG, `${md} ${outcome.status} ${outcome.body.slice(0, 120).replace(/\n/g, ' ')}\n`);
        checkHttp(outcome, g.body, g.method);
        // A DELETE with our session ended it: carry on with a new one.
        if (h.verb === 'DELETE' && outcome.status === 204) session = await initialize(url);
      }), { numRuns: 400 });
    } finally {
      agent.destroy();
    }
    // The runs reached past the HTTP checks into the protocol (not only 4xx refusals), in every mode.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(40);
    expect([...modes.keys()].sort()).toEqual(['legacy', 'modern', 'wild']);
    expect(statuses.get(202) ?? 0).toBeGreaterThan(0);

    // Afterwards: a normal legacy echo with the session, and a 2026-07-28 one.
    session = await initialize(url);
    const legacy = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'final', method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } }),
    });
    expect(legacy.status).toBe(200);
    expect(await legacy.json()).toEqual({ jsonrpc: '2.0', id: 'final', result: { content: [{ type: 'text', text: 'still here' }] } });
    const modern = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'final-m', method: 'tools/call', params: { name: 'echo', arguments: { text: 'modern' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
    });
    expect(modern.status).toBe(200);
    expect(((await modern.json()) as { result: { content: { text: string }[] } }).result.content[0].text).toBe('modern');
    // Nothing was served as a crash, no worker died, nothing leaked into this thread's prototypes.
    expect(ts.logs.filter((l) => /unexpected error|failed:|crashed|exited/.test(l))).toEqual([]);
    expect(ts.server.workerThreadIds).toHaveLength(2);
    expect(({} as Json).polluted).toBeUndefined();
    expect(unhandled).toEqual([]);
    // Nothing stays tracked once the generated requests have ended.
    const deadline = Date.now() + 5_000;
    while (ts.server.registry.counters().inFlight !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(ts.server.registry.counters().inFlight).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// stdio

describe('stdio: generated lines', () => {
  it('every output line is JSON-RPC; a final echo works and the server ends with its input', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const lines: string[] = [];
    let buffered = '';
    output.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let i;
      while ((i = buffered.indexOf('\n')) !== -1) {
        lines.push(buffered.slice(0, i));
        buffered = buffered.slice(i + 1);
      }
    });
    const logs: string[] = [];
    const done = serveStdioServer({ tools: kToolsModule, input, output, maxBodyBytes: 64 * 1024, janitor: false, log: (_l, m) => { logs.push(m); } });
    let checked = 0;
    const checkNewLines = () => {
      for (; checked < lines.length; checked++) {
        let m: unknown;
        try {
          m = JSON.parse(lines[checked]);
        } catch {
          throw new Error(`output line is not JSON: ${JSON.stringify(lines[checked].slice(0, 200))}`);
        }
        expect(isJsonRpcResponse(m) || isJsonRpcOutgoing(m), lines[checked].slice(0, 300)).toBe(true);
      }
    };
    const waitFor = async (id: string) => {
      const needle = `"id":${JSON.stringify(id)}`;
      const deadline = Date.now() + 5_000;
      while (!lines.some((l) => l.includes(needle))) {
        if (Date.now() > deadline) throw new Error(`no answer to ${id} within 5 s`);
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    const lineOf = fc.oneof(
      // KNOWN BUG (see the test below): an open 2026-07-28 subscriptions/listen keeps the stdio
      // server from ending with its input, so well-formed listens are left out here.
      { weight: 20, arbitrary: mode.chain((md) => message(md)).filter((g) => g.method !== 'subscriptions/listen').map((g) => g.body) },
      // Longer than maxLineBytes: answered with a parse error, then the next line is served.
      { weight: 1, arbitrary: fc.constant(Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"ping","pad":"${'x'.repeat(70 * 1024)}"}`)) },
      { weight: 1, arbitrary: fc.constantFrom(Buffer.from(''), Buffer.from('   '), Buffer.from('\r'), Buffer.from('\u2028')) },
    );
    let sentinel = 0;
    await fc.assert(fc.asyncProperty(fc.array(lineOf, { minLength: 1, maxLength: 4 }), async (batch) => {
      const id = `sentinel-${sentinel++}`;
      for (const bytes of batch) input.write(Buffer.concat([bytes, Buffer.from('\n')]));
      input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' })}\n`);
      await waitFor(id);
      checkNewLines();
    }), { numRuns: 300 });
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'final', method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } })}\n`);
    await waitFor('final');
    expect(JSON.parse(lines.find((l) => l.includes('"id":"final"'))!)).toEqual({ jsonrpc: '2.0', id: 'final', result: { content: [{ type: 'text', text: 'still here' }] } });
    input.end();
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error('the stdio server did not end within 10 s of its input')), 10_000))]);
    checkNewLines();
    expect(logs.filter((l) => /failed:|unexpected/.test(l))).toEqual([]);
    expect(({} as Json).polluted).toBeUndefined();
    expect(unhandled).toEqual([]);
  });
});

describe('stdio: the end of the input', () => {
  // KNOWN BUG (see the report): stdio.ts resolves only when the input has ended *and* every request
  // has finished, but nothing ends a 2026-07-28 subscriptions/listen when the input ends (the HTTP
  // side calls engine.closeListeners() at close; stdio never does). serveStdioServer() then never
  // resolves, and `sluice serve --stdio` exits with code 13 (unsettled top-level await) instead of 0
  // once its client closes stdin.
  it('ends with an open subscriptions/listen, which gets its completion result', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (c: Buffer) => { text += c.toString('utf8'); });
    const done = serveStdioServer({ tools: kToolsModule, input, output, janitor: false, log: () => {} });
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } })}\n`);
    const deadline = Date.now() + 5_000;
    while (!text.includes('notifications/subscriptions/acknowledged') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(text).toContain('notifications/subscriptions/acknowledged');
    input.end();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([done.then(() => 'ended'), new Promise((r) => { timer = setTimeout(() => r('still running 3 s after the input ended'), 3_000); })]);
    clearTimeout(timer);
    expect(outcome).toBe('ended');
    expect(text).toContain('"id":"listen-1","result"');
  });
});

// ---------------------------------------------------------------------------------------------
// A crash found by the fuzzer, in a server process of its own (it takes the whole process down).

describe('client-sent responses that name another worker thread', () => {
  // KNOWN BUG (see the report): the endpoint forwards a client's JSON-RPC response whose id names
  // another thread (`s<threadId>-<n>`) through the supervisor (engine.ts handleResponse →
  // http-worker.ts send → server.ts 'response' case → other.postMessage). Nothing bounds the
  // result's depth, and the supervisor's re-post runs without a try/catch in a 'message' handler:
  // a result nested ~2000-3000 deep deserialises in the main thread but cannot be serialised again
  // (RangeError: Maximum call stack size exceeded), the exception is uncaught, and the process
  // aborts (uWS: SIGABRT, exit 134). One unauthenticated POST (sessions off; with sessions, any
  // client can get one) kills the server. Deeper results fail earlier, in the worker (a 500).
  it('a deeply nested result neither kills the server nor gets a 500', async () => {
    const child = spawn(process.execPath, [new URL('../fixtures/hardening-server.mjs', import.meta.url).pathname], { stdio: ['pipe', 'pipe', 'pipe'] });
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const exited = new Promise<void>((resolve) => child.once('exit', (code, signal) => { exit = { code, signal }; resolve(); }));
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString('utf8'); });
    try {
      const first = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8'); if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n'))); });
        setTimeout(() => reject(new Error(`the server did not start: ${stderr}`)), 15_000);
      });
      const { url: target, threads } = JSON.parse(first) as { url: string; threads: number[] };
      const statuses: number[] = [];
      for (const depth of [2_000, 2_500, 3_000, 20_000]) {
        // Learn which worker this connection lands on, then name the other one.
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const probe = await send(target, 'POST', { 'content-type': 'application/json', accept: 'application/json' }, Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}'), agent);
          const other = threads.find((t) => String(t) !== probe.worker) ?? threads[0];
          const body = Buffer.from(`{"jsonrpc":"2.0","id":"s${other}-1","result":${'['.repeat(depth)}${']'.repeat(depth)}}`);
          const outcome = await send(target, 'POST', { 'content-type': 'application/json', accept: 'application/json' }, body, agent).catch((error: Error) => ({ status: -1, body: error.message }));
          statuses.push(outcome.status);
        } finally {
          agent.destroy();
        }
        await new Promise((r) => setTimeout(r, 300));
        expect(exit, `the server process died (depth ${depth}): ${stderr.slice(0, 400)}`).toBeUndefined();
      }
      expect(statuses.every((s) => s >= 200 && s < 500), `statuses ${statuses.join(', ')}`).toBe(true);
      const ping = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: '{"jsonrpc":"2.0","id":2,"method":"ping"}' });
      expect(ping.status).toBe(200);
    } finally {
      child.stdin.end();
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (exit === undefined) child.kill('SIGKILL');
    }
  });
});
