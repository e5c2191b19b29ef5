/** `sluice call` and `sluice list`: a client against a URL or a stdio command, readable output. */
import { join } from 'node:path';

import { CancelledError, SluiceError, kindOf } from '../errors.js';
import { Client, RpcError } from '../client/client.js';
import type { CallToolResult, RequestOptions } from '../client/client.js';
import { HttpClientTransport, InsufficientScopeError, UnauthorizedError } from '../client/http.js';
import { StdioClientTransport } from '../client/stdio.js';
import { PageWalk } from '../client/pages.js';
import { UsageError } from './flags.js';

export interface ClientFlags {
  stdio: string | undefined;
  timeoutMs: number | undefined;
  era: 'auto' | 'legacy' | 'modern';
  json: boolean;
  /** `call --task`: ask for a task, report its status changes. */
  task: boolean;
  /** The bearer token for a URL (`--bearer`, else SLUICE_BEARER_TOKEN); undefined sends none. */
  bearer: string | undefined;
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
  const transport = new HttpClientTransport(flags.bearer === undefined ? { url } : { url, bearer: flags.bearer });
  return { client: new Client(transport, { era: flags.era }), where: url.href, url };
}

/**
 * A 401 or 403 insufficient_scope as one line: what was refused, the scopes the server names, and
 * the resource metadata URL (which names the authorization servers that issue tokens).
 */
function explainAuth(error: UnauthorizedError | InsufficientScopeError, where: string, sentToken: boolean): string {
  const metadata = error.resourceMetadata === undefined ? '; the server named no resource metadata URL' : `; resource metadata: ${error.resourceMetadata}`;
  if (error instanceof InsufficientScopeError) {
    const needs = error.requiredScopes.length === 0 ? 'the server named no scopes' : `the token needs scope ${error.requiredScopes.join(' ')}`;
    return `${where} refused the bearer token's scopes (403 insufficient_scope): ${needs}${metadata}`;
  }
  const scopes = error.scopes === undefined || error.scopes.length === 0 ? '' : `; scope ${error.scopes.join(' ')}`;
  if (!sentToken) return `${where} needs a bearer token (401): pass --bearer <token> or set SLUICE_BEARER_TOKEN${scopes}${metadata}`;
  const why = error.error === undefined ? '' : ` ${error.error}${error.description === undefined ? '' : `: ${error.description}`}`;
  return `${where} refused the bearer token (401${why})${scopes}${metadata}`;
}

/** A connection or protocol failure, with what the user can do about it. */
function explain(error: unknown, where: string, url: URL | undefined, sentToken: boolean): string {
  if (error instanceof UnauthorizedError || error instanceof InsufficientScopeError) return explainAuth(error, where, sentToken);
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
  if (error instanceof RpcError) return `the server refused: ${printable(message)} (JSON-RPC error ${error.rpcCode})`;
  return message;
}

/** `sluice call`: one tool call (or task: `--task`), progress on stderr, the result on stdout; SIGINT cancels it. */
export async function call(args: string[], flags: ClientFlags): Promise<number> {
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
    const options = {
      signal: interrupt.signal,
      ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
      onProgress: (p: { progress: number; total?: number; message?: string }) => process.stderr.write(`progress ${p.progress}${p.total === undefined ? '' : `/${p.total}`}${p.message === undefined ? '' : ` ${printable(String(p.message))}`}\n`),
    };
    const result = flags.task ? await callAsTask(client, tool, toolArgs, options) : await client.callTool(tool, toolArgs, options);
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return result.isError === true ? 1 : 0;
    }
    if (result.isError === true) {
      process.stderr.write(`sluice: the tool ${tool} failed:\n${forStream(renderResult(result), process.stderr)}`);
      return 1;
    }
    process.stdout.write(forStream(renderResult(result), process.stdout));
    return 0;
  } catch (error) {
    if (error instanceof CancelledError) {
      process.stderr.write(`sluice: cancelled: ${error.reason ?? ''}\n`);
      return interrupt.signal.aborted ? 130 : 1;
    }
    process.stderr.write(`sluice: ${await explainCallFailure(client, tool, error, where, url, flags.bearer !== undefined)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSigint);
    await client.close();
  }
}

/**
 * `call --task`: one stderr line per status change (UTC time, status, message). The interrupt
 * signal makes the handle send tasks/cancel; client.close() lets that request out before exiting.
 */
async function callAsTask(client: Client, tool: string, toolArgs: Record<string, unknown>, options: RequestOptions): Promise<CallToolResult> {
  const handle = await client.callTool(tool, toolArgs, {
    ...options,
    task: true,
    onStatus: (task) => process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${printable(String(task.status))}${task.statusMessage === undefined ? '' : ` ${printable(String(task.statusMessage))}`}\n`),
  });
  if (handle.taskId === undefined) process.stderr.write('sluice: the server answered at once, without a task\n');
  else process.stderr.write(`sluice: task ${handle.taskId}\n`);
  return handle.result();
}

/** A failed call; for a tool that does not exist, the tools that do. */
async function explainCallFailure(client: Client, tool: string, error: unknown, where: string, url: URL | undefined, sentToken: boolean): Promise<string> {
  const text = explain(error, where, url, sentToken);
  if (!(error instanceof RpcError) || error.rpcCode !== -32602) return text;
  let names: string[];
  try {
    names = (await listAll(client, 'tools', { timeoutMs: 5_000 })).map((t) => String(t.name));
  } catch {
    return text;
  }
  if (names.includes(tool)) return text;
  return `${where} has no tool named ${tool}. Its tools: ${names.length === 0 ? 'none' : printable(names.join(', '))}`;
}

type Item = Record<string, unknown>;

type ListKind = 'tools' | 'resources' | 'resourceTemplates' | 'prompts';
const kListMethods = { tools: 'tools/list', resources: 'resources/list', resourceTemplates: 'resources/templates/list', prompts: 'prompts/list' } as const;
/** The field that names an item of each list: `sluice list` prints it, and an item without it is not one. */
const kItemName = { tools: 'name', resources: 'uri', resourceTemplates: 'uriTemplate', prompts: 'name' } as const;

/**
 * A page's items, checked: a list of objects, each named by a string. The client passes results on
 * as the server sent them; printed unchecked, a string became "Tools (3): undefined undefined
 * undefined" and a null item a bare TypeError.
 */
function pageItems(result: Record<string, unknown>, kind: ListKind): Item[] {
  const items = result[kind];
  if (items === undefined) return [];
  const method = kListMethods[kind];
  if (!Array.isArray(items)) throw new SluiceError('invalid_response', `the server's ${method} answered ${kind} that is ${kindOf(items)}, not a list`);
  const key = kItemName[kind];
  items.forEach((item: unknown, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new SluiceError('invalid_response', `the server's ${method}: ${kind}[${i}] is ${kindOf(item)}, not an object`);
    const name = (item as Item)[key];
    if (typeof name !== 'string') throw new SluiceError('invalid_response', `the server's ${method}: ${kind}[${i}].${key} is ${kindOf(name)}, not a string`);
  });
  return items as Item[];
}

/** Every page of a list (at most 1000; a cursor given twice ends it as invalid_response). */
async function listAll(client: Client, kind: ListKind, options: { timeoutMs?: number } = {}): Promise<Item[]> {
  const items: Item[] = [];
  const walk = new PageWalk(kListMethods[kind], 1000);
  let cursor: string | undefined;
  do {
    const params = cursor === undefined ? {} : { cursor };
    const result = kind === 'tools' ? await client.listTools(params, options)
      : kind === 'resources' ? await client.listResources(params, options)
        : kind === 'resourceTemplates' ? await client.listResourceTemplates(params, options)
          : await client.listPrompts(params, options);
    for (const item of pageItems(result, kind)) items.push(item);
    cursor = walk.next(result);
  } while (cursor !== undefined);
  return items;
}

/** `sluice list`: the tools, resources, resource templates and prompts of a server. */
export async function list(args: string[], flags: ClientFlags): Promise<number> {
  const [target, ...rest] = flags.stdio === undefined ? args : [undefined, ...args];
  if (flags.stdio === undefined && target === undefined) throw new UsageError('list needs a server (a URL, or --stdio "<command>")');
  if (rest.length > 0) throw new UsageError(`unexpected arguments: ${rest.join(' ')}`);
  const { client, where, url } = connect(target, flags);
  const options = flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs };
  try {
    const tools = await listAll(client, 'tools', options);
    for (const name of client.droppedTools) process.stderr.write(`sluice: left out tool ${name}: its x-mcp-header annotations are invalid (clients must not call it)\n`);
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
        const argsList = Array.isArray(p.arguments) ? (p.arguments as unknown[]).map((a) => (a !== null && typeof a === 'object' ? `${String((a as Item).name)}${(a as Item).required === true ? '' : '?'}` : '?')) : [];
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
    process.stderr.write(`sluice: ${explain(error, where, url, flags.bearer !== undefined)}\n`);
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

/**
 * Control characters (C0, DEL, C1) and the bidirectional overrides and isolates, which a server's
 * names and descriptions could use to drive the terminal (colours, its title, the clipboard
 * through OSC 52) or to show one text and mean another: printed as `\u{…}` escapes instead.
 */
const kUnprintable = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function printable(text: string): string {
  return escaped(text, kUnprintable);
}

/** The characters `pattern` matches, as `\u{…}` escapes. */
function escaped(text: string, pattern: RegExp): string {
  return text.replace(pattern, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
}

/** kUnprintable but newline and tab: what a tool's text may not send to a terminal. */
const kTerminalUnsafe = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A tool's text for `stream`. On a terminal, its control characters but newline and tab are
 * printed as `\u{…}` escapes (CRLF line ends as newlines): a server could otherwise drive the
 * terminal (its clipboard through OSC 52, its title, a carriage return or cursor moves that hide
 * what was printed). Piped or redirected, it is written as sent, so output can be kept byte for byte.
 */
function forStream(text: string, stream: NodeJS.WriteStream): string {
  if (stream.isTTY !== true) return text;
  return escaped(text.replace(/\r\n/g, '\n'), kTerminalUnsafe);
}

function section(title: string, listed: [string, string][]): string {
  if (listed.length === 0) return `${title}: none\n`;
  const rows = listed.map(([name, text]): [string, string] => [printable(name), printable(text)]);
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
  const content: unknown = result.content ?? [];
  // Printed unchecked, content that is not a list printed nothing (exit 0), and a null block ended in a TypeError.
  if (!Array.isArray(content)) throw new SluiceError('invalid_response', `the server's tools/call result has content that is ${kindOf(content)}, not a list`);
  content.forEach((block: unknown, i) => {
    if (block === null || typeof block !== 'object' || Array.isArray(block)) throw new SluiceError('invalid_response', `the server's tools/call result: content[${i}] is ${kindOf(block)}, not a content block`);
  });
  for (const item of content as Item[]) {
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
