import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createServer } from '../supervisor/server.js';
import { serveStdioServer } from '../server/stdio-server.js';
import { kLogLevels } from '../server/options.js';
import type { LogLevel, ServerOptions } from '../server/options.js';
import { toolsModuleLabel, toolsModuleUrl } from '../catalog/catalog.js';
import type { CatalogNames } from '../catalog/catalog.js';

import { CancelledError, SluiceError } from '../errors.js';
import { Client, RpcError } from '../client/client.js';
import { HttpClientTransport } from '../client/http.js';
import { StdioClientTransport } from '../client/stdio.js';

const kUsage = `Usage:
  sluice serve [options]       serve MCP tools over HTTP (or stdio)
  sluice call <url> <tool> [json-args] [--timeout ms] [--era era] [--json]
  sluice call --stdio "<command>" <tool> [json-args] [--timeout ms] [--json]
                               call a tool, printing progress as it comes; Ctrl-C cancels the call
  sluice list <url> [--json]   list the tools, resources and prompts a server offers
  sluice list --stdio "<command>" [--json]
  sluice --version

  <url> is the MCP endpoint: http://127.0.0.1:3000/mcp; "127.0.0.1:3000" means the same
  (http:// and /mcp are added when missing).

Options of serve:
  --tools <module>     module exporting the tools, resources and prompts (a path resolves
                       against the current directory; .ts works where Node strips types: Node
                       >= 22.18, or started with \`node --import tsx\`). Default: the demo tools
                       (echo, sleep, spin)
  --host <host>        address to bind (default 127.0.0.1)
  --port <port>        port (default 3000; 0 picks a free one)
  --workers <n>        HTTP worker threads (default: available parallelism)
  --http <kind>        auto | uws | node (default auto: uWebSockets.js, else node:http with a warning)
  --stdio              serve over stdin/stdout instead of HTTP
  --metrics            serve Prometheus text at GET /metrics
  --no-sessions        no legacy MCP-Session-Id sessions
  --cancel-on-disconnect
                       legacy era: a client that disconnects cancels its requests (the 2026-07-28
                       era always does)
  --cors-origin <origin>
                       let browser pages from this origin call the endpoint (repeatable)
  --shutdown-grace <ms>
                       at SIGINT/SIGTERM, how long running requests may finish before they are
                       cancelled (default 5000)
  --log-level <level>  debug | info | warn | error (default warn; a tool that throws is logged
                       at warn, with its name)

Options of call and list:
  --stdio <command>    start this stdio server and talk to it instead of a URL
  --timeout <ms>       (call) cancel the call after this long
  --era <era>          auto | legacy | modern (default auto)
  --json               print the raw JSON result instead of readable text

  -h, --help           show this help
  -v, --version        print the version
`;

/** After a signalled stdio shutdown, how long what is left may run before the process exits. */
const kExitSlackMs = 500;

/** A mistake in the command line: exit code 2, with the usage. */
class UsageError extends Error {}

/** The `sluice` command. Returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`sluice: ${error.message}\n\nRun \`sluice --help\` for the options.\n`);
      return 2;
    }
    process.stderr.write(`sluice: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

async function run(argv: readonly string[]): Promise<number> {
  const command = argv[0];
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        tools: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        workers: { type: 'string' },
        http: { type: 'string' },
        // `serve --stdio` is a switch; `call/list --stdio "<command>"` takes the command to spawn.
        stdio: { type: command === 'call' || command === 'list' ? 'string' : 'boolean' },
        metrics: { type: 'boolean' },
        'no-sessions': { type: 'boolean' },
        'cancel-on-disconnect': { type: 'boolean' },
        'cors-origin': { type: 'string', multiple: true },
        'shutdown-grace': { type: 'string' },
        'log-level': { type: 'string' },
        timeout: { type: 'string' },
        era: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    process.stdout.write(kUsage);
    return 0;
  }
  if (values.version === true) {
    process.stdout.write(`sluice ${version()}\n`);
    return 0;
  }
  if (positionals.length === 0) {
    process.stderr.write(kUsage);
    return 2;
  }
  const client: ClientFlags = {
    stdio: typeof values.stdio === 'string' ? values.stdio : undefined,
    timeoutMs: integerFlag('timeout', values.timeout, 1),
    era: choiceFlag('era', values.era, ['auto', 'legacy', 'modern'] as const) ?? 'auto',
    json: values.json === true,
  };
  switch (positionals[0]) {
    case 'call': return call(positionals.slice(1), client);
    case 'list': return list(positionals.slice(1), client);
    case 'serve': return serve(positionals.slice(1), values);
    default: throw new UsageError(`unknown command ${positionals[0]} (commands: serve, call, list)`);
  }
}

/** The version in Sluice's package.json. */
function version(): string {
  // From dist/src/cli/ or src/cli/: the first package.json up the tree that is Sluice's.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'sluice' && typeof pkg.version === 'string') return pkg.version;
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

function integerFlag(name: string, text: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (text === undefined) return undefined;
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`;
    throw new UsageError(`--${name} must be ${range}, got ${JSON.stringify(text)}`);
  }
  return n;
}

function choiceFlag<T extends string>(name: string, text: string | undefined, choices: readonly T[]): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text)) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
  return text as T;
}

export interface ServeFlags {
  tools?: string | undefined;
  host?: string | undefined;
  port?: string | undefined;
  workers?: string | undefined;
  http?: string | undefined;
  stdio?: string | boolean | undefined;
  metrics?: boolean | undefined;
  'no-sessions'?: boolean | undefined;
  'cancel-on-disconnect'?: boolean | undefined;
  'cors-origin'?: string[] | undefined;
  'shutdown-grace'?: string | undefined;
  'log-level'?: string | undefined;
}

/** The server options `sluice serve` flags stand for (checked: a bad value is a usage error). */
export function serveOptions(values: ServeFlags): ServerOptions & { tools: string; logLevel: LogLevel } {
  let tools: string;
  if (values.tools === undefined) {
    tools = fileURLToPath(new URL('../../examples/tools.js', import.meta.url));
  } else {
    // Resolved here, against the current directory, so every message names the same file.
    tools = toolsModuleUrl(values.tools);
    const file = toolsModuleLabel(tools);
    if (tools.startsWith('file:') && !existsSync(file)) {
      throw new SluiceError('tools_module_failed', `the tools module ${file} does not exist (--tools ${values.tools}, resolved against the current directory ${process.cwd()})`);
    }
  }
  const shutdownGraceMs = integerFlag('shutdown-grace', values['shutdown-grace'], 0, 2 ** 31 - 1);
  const origins = values['cors-origin'] ?? [];
  return {
    tools,
    host: values.host,
    port: integerFlag('port', values.port, 0, 65535) ?? 3000,
    workers: integerFlag('workers', values.workers, 1, 256),
    http: choiceFlag('http', values.http, ['auto', 'uws', 'node'] as const),
    metrics: values.metrics === true,
    sessions: values['no-sessions'] !== true,
    logLevel: choiceFlag('log-level', values['log-level'], kLogLevels) ?? 'warn',
    cancelOnDisconnect: values['cancel-on-disconnect'] === true,
    ...(origins.length > 0 ? { cors: { origins } } : {}),
    ...(shutdownGraceMs === undefined ? {} : { shutdownGraceMs }),
  };
}

/** `sluice serve`. */
async function serve(extra: string[], values: ServeFlags): Promise<number> {
  if (extra.length > 0) {
    const hint = /\.[cm]?[jt]s$/.test(extra[0]!) ? ` (to serve a tools module: --tools ${extra[0]})` : '';
    throw new UsageError(`serve takes no arguments, got ${extra.join(' ')}${hint}`);
  }
  const options = serveOptions(values);
  const { logLevel } = options;
  if (values.stdio === true) {
    // Desktop clients stop a stdio server with SIGTERM: shut down as gracefully as over HTTP.
    const shutdown = new AbortController();
    const stop = () => { process.stderr.write('sluice: shutting down\n'); shutdown.abort(); };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      await serveStdioServer({
        ...options,
        signal: shutdown.signal,
        onServing: (served) => { if (logLevel !== 'error') process.stderr.write(`sluice: serving MCP over stdio\n${describeServed(served)}`); },
      });
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    // An inline tool that ignored the shutdown cancel must not hold the process open.
    if (shutdown.signal.aborted) setTimeout(() => process.exit(0), kExitSlackMs).unref();
    return 0;
  }
  const server = createServer(options);
  // Signal handlers first: a SIGTERM that arrives while starting must still shut down cleanly.
  let onSignal = () => {};
  const stopped = new Promise<void>((resolve) => {
    onSignal = () => { process.stderr.write('sluice: shutting down\n'); resolve(); };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
  try {
    const address = await server.listen();
    if (logLevel !== 'error') {
      const threads = Math.max(1, server.workerThreadIds.length);
      const served = server.served === undefined ? '' : describeServed(server.served);
      process.stderr.write(`sluice: serving MCP at ${address.url} (${server.adapterDetail ?? server.adapter}, ${threads} HTTP thread${threads === 1 ? '' : 's'})\n${served}`);
    }
    await stopped;
    await server.close();
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Longest run of names on the start-up line before the rest are counted instead. */
const kNamesWidth = 100;

/** The start-up lines naming what is served: "  tools (3): echo, sleep, spin". */
export function describeServed(served: CatalogNames): string {
  const rows: [string, readonly string[]][] = [['tools', served.tools], ['resources', served.resources], ['prompts', served.prompts]];
  let text = '';
  for (const [what, names] of rows) {
    if (names.length === 0 && what !== 'tools') continue;
    let shown = '';
    let count = 0;
    for (const name of names) {
      const next = shown === '' ? name : `${shown}, ${name}`;
      if (count > 0 && next.length > kNamesWidth) break;
      shown = next;
      count++;
    }
    const more = names.length > count ? `, and ${names.length - count} more` : '';
    text += `  ${what} (${names.length}): ${names.length === 0 ? 'none' : shown + more}\n`;
  }
  return text;
}

interface ClientFlags {
  stdio: string | undefined;
  timeoutMs: number | undefined;
  era: 'auto' | 'legacy' | 'modern';
  json: boolean;
}

/** The MCP endpoint a user typed: `127.0.0.1:3000` (or `http://127.0.0.1:3000/`) means `http://127.0.0.1:3000/mcp`. */
export function endpointUrl(text: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new UsageError(`${JSON.stringify(text)} is not a URL (expected e.g. http://127.0.0.1:3000/mcp)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`the URL must be http:// or https://, got ${text}`);
  if (url.pathname === '/') url.pathname = '/mcp';
  return url;
}

/** Connects a client to a URL or a stdio server command. */
function connect(target: string | undefined, flags: ClientFlags): { client: Client; where: string; url: URL | undefined } {
  if (flags.stdio !== undefined) {
    const transport = new StdioClientTransport({ command: '/bin/sh', args: ['-c', `exec ${flags.stdio}`], stderr: 'inherit' });
    return { client: new Client(transport, { era: flags.era }), where: `the stdio server ${JSON.stringify(flags.stdio)}`, url: undefined };
  }
  const url = endpointUrl(target!);
  return { client: new Client(new HttpClientTransport({ url }), { era: flags.era }), where: url.href, url };
}

/** A connection or protocol failure, with what the user can do about it. */
function explain(error: unknown, where: string, url: URL | undefined): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED') return `cannot connect to ${where}: connection refused (is the server running, on that port?)`;
  if (code === 'ENOTFOUND') return `cannot connect to ${where}: unknown host`;
  // The client reports the status only in its message.
  if (url !== undefined && /answered 404\b/.test(message)) {
    return url.pathname === '/mcp'
      ? `${where} answered 404: no MCP endpoint at /mcp (if the server's endpoint has another path, give its full URL)`
      : `${where} answered 404: no MCP endpoint at ${url.pathname}. Sluice serves at /mcp: try ${url.protocol}//${url.host}/mcp`;
  }
  if (error instanceof RpcError) return `the server refused: ${message} (JSON-RPC error ${error.rpcCode})`;
  return message;
}

/** `sluice call`: one tool call, progress on stderr, the result on stdout; SIGINT cancels it. */
async function call(args: string[], flags: ClientFlags): Promise<number> {
  const [target, tool, json, ...rest] = flags.stdio === undefined ? args : [undefined, ...args];
  if (tool === undefined || (flags.stdio === undefined && target === undefined)) throw new UsageError('call needs a server (a URL, or --stdio "<command>") and a tool name');
  if (rest.length > 0) throw new UsageError(`unexpected arguments after the tool's JSON arguments: ${rest.join(' ')}`);
  let toolArgs: Record<string, unknown> = {};
  if (json !== undefined) {
    try {
      toolArgs = JSON.parse(json) as Record<string, unknown>;
    } catch {
      throw new UsageError(`the tool arguments must be a JSON object, e.g. '{"text":"hi"}', got ${json}`);
    }
    if (toolArgs === null || typeof toolArgs !== 'object' || Array.isArray(toolArgs)) throw new UsageError(`the tool arguments must be a JSON object, got ${json}`);
  }
  const { client, where, url } = connect(target, flags);
  const interrupt = new AbortController();
  const onSigint = () => interrupt.abort('interrupted (SIGINT)');
  process.once('SIGINT', onSigint);
  try {
    const result = await client.callTool(tool, toolArgs, {
      signal: interrupt.signal,
      ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
      onProgress: (p) => process.stderr.write(`progress ${p.progress}${p.total === undefined ? '' : `/${p.total}`}${p.message === undefined ? '' : ` ${p.message}`}\n`),
    });
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return result.isError === true ? 1 : 0;
    }
    if (result.isError === true) {
      process.stderr.write(`sluice: the tool ${tool} failed:\n${renderResult(result)}`);
      return 1;
    }
    process.stdout.write(renderResult(result));
    return 0;
  } catch (error) {
    if (error instanceof CancelledError) {
      process.stderr.write(`sluice: cancelled: ${error.reason ?? ''}\n`);
      return interrupt.signal.aborted ? 130 : 1;
    }
    process.stderr.write(`sluice: ${await explainCallFailure(client, tool, error, where, url)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSigint);
    await client.close();
  }
}

/** A failed call; for a tool that does not exist, the tools that do. */
async function explainCallFailure(client: Client, tool: string, error: unknown, where: string, url: URL | undefined): Promise<string> {
  const text = explain(error, where, url);
  if (!(error instanceof RpcError) || error.rpcCode !== -32602) return text;
  let names: string[];
  try {
    names = (await listAll(client, 'tools', { timeoutMs: 5_000 })).map((t) => String(t.name));
  } catch {
    return text;
  }
  if (names.includes(tool)) return text;
  return `${where} has no tool named ${tool}. Its tools: ${names.length === 0 ? 'none' : names.join(', ')}`;
}

type Item = Record<string, unknown>;

/** Every page of a list. */
async function listAll(client: Client, kind: 'tools' | 'resources' | 'resourceTemplates' | 'prompts', options: { timeoutMs?: number } = {}): Promise<Item[]> {
  const items: Item[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const params = cursor === undefined ? {} : { cursor };
    const result = kind === 'tools' ? await client.listTools(params, options)
      : kind === 'resources' ? await client.listResources(params, options)
        : kind === 'resourceTemplates' ? await client.listResourceTemplates(params, options)
          : await client.listPrompts(params, options);
    items.push(...((result[kind] as Item[] | undefined) ?? []));
    cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
    if (cursor === undefined) break;
  }
  return items;
}

/** `sluice list`: the tools, resources, resource templates and prompts of a server. */
async function list(args: string[], flags: ClientFlags): Promise<number> {
  const [target, ...rest] = flags.stdio === undefined ? args : [undefined, ...args];
  if (flags.stdio === undefined && target === undefined) throw new UsageError('list needs a server (a URL, or --stdio "<command>")');
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  const { client, where, url } = connect(target, flags);
  const options = flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs };
  try {
    const tools = await listAll(client, 'tools', options);
    // A server without resources or prompts may not implement their lists at all.
    const optional = async (kind: 'resources' | 'resourceTemplates' | 'prompts') => {
      try {
        return await listAll(client, kind, options);
      } catch (error) {
        if (error instanceof RpcError && error.rpcCode === -32601) return [];
        throw error;
      }
    };
    const resources = await optional('resources');
    const resourceTemplates = await optional('resourceTemplates');
    const prompts = await optional('prompts');
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ tools, resources, resourceTemplates, prompts }, null, 2)}\n`);
      return 0;
    }
    let out = section('Tools', tools.map((t) => [String(t.name), firstLine(t.description)]));
    if (resources.length > 0) out += section('Resources', resources.map((r) => [String(r.uri), [r.name, r.mimeType === undefined ? undefined : `(${String(r.mimeType)})`, firstLine(r.description)].filter((x) => x !== undefined && x !== '').join('  ')]));
    if (resourceTemplates.length > 0) out += section('Resource templates', resourceTemplates.map((r) => [String(r.uriTemplate), [r.name, firstLine(r.description)].filter((x) => x !== undefined && x !== '').join('  ')]));
    if (prompts.length > 0) {
      out += section('Prompts', prompts.map((p) => {
        const argsList = Array.isArray(p.arguments) ? (p.arguments as Item[]).map((a) => `${String(a.name)}${a.required === true ? '' : '?'}`) : [];
        return [String(p.name), [firstLine(p.description), argsList.length > 0 ? `(arguments: ${argsList.join(', ')})` : ''].filter((x) => x !== '').join('  ')];
      }));
    }
    process.stdout.write(out);
    return 0;
  } catch (error) {
    if (error instanceof CancelledError) {
      process.stderr.write(`sluice: cancelled: ${error.reason ?? ''}\n`);
      return 1;
    }
    process.stderr.write(`sluice: ${explain(error, where, url)}\n`);
    return 1;
  } finally {
    await client.close();
  }
}

function firstLine(text: unknown): string {
  if (typeof text !== 'string') return '';
  const line = text.split('\n', 1)[0]!.trim();
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

function section(title: string, rows: [string, string][]): string {
  if (rows.length === 0) return `${title}: none\n`;
  const width = Math.min(32, Math.max(...rows.map(([name]) => name.length)));
  return `${title} (${rows.length}):\n${rows.map(([name, text]) => `  ${name.padEnd(width)}${text === '' ? '' : `  ${text}`}`.trimEnd()).join('\n')}\n`;
}

/**
 * A tool result for a person: text content as text, structured content as indented JSON (the text
 * that only repeats it is left out), other content as a one-line summary; `_meta` and the like dropped.
 */
export function renderResult(result: Record<string, unknown>): string {
  const structured = result.structuredContent;
  const structuredJson = structured === undefined ? undefined : JSON.stringify(structured);
  const parts: string[] = [];
  for (const item of Array.isArray(result.content) ? (result.content as Item[]) : []) {
    switch (item.type) {
      case 'text': {
        const text = String(item.text ?? '');
        if (structuredJson !== undefined && sameJson(text, structuredJson)) continue;
        parts.push(text);
        break;
      }
      case 'image':
      case 'audio':
        parts.push(`[${String(item.type)} ${String(item.mimeType ?? '')}, ${Math.floor(String(item.data ?? '').length * 3 / 4)} bytes]`);
        break;
      case 'resource_link':
        parts.push(`[resource ${String(item.uri)}${item.name === undefined ? '' : ` (${String(item.name)})`}]`);
        break;
      case 'resource': {
        const resource = (item.resource ?? {}) as Item;
        parts.push(typeof resource.text === 'string' ? resource.text : `[resource ${String(resource.uri)}${resource.mimeType === undefined ? '' : `, ${String(resource.mimeType)}`}]`);
        break;
      }
      default:
        parts.push(JSON.stringify(item));
    }
  }
  if (structured !== undefined) parts.push(JSON.stringify(structured, null, 2));
  return parts.map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join('');
}

function sameJson(text: string, json: string): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === json;
  } catch {
    return false;
  }
}
