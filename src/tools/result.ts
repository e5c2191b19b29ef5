/**
 * What a tool returns: MCP content blocks and the tools/call result, the plain conversion of a
 * handler's value into one, the check that a result can be sent as JSON, and the text of an error.
 * Knows nothing of a tool's schemas (define.ts checks results against an outputSchema).
 */
import { render } from '../registry/reason.js';
import { isInputRequired } from './context.js';
import type { InputRequired } from './context.js';

/** MCP content blocks a tool may return (the common ones; others pass through as given). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; [key: string]: unknown }
  | { type: 'resource'; resource: Record<string, unknown> };

/** A tools/call result. `structuredContent`, when present, is always a JSON object. */
export interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/**
 * What a handler may return:
 *  - a full CallToolResult (sent as given, once checked);
 *  - a string: one text block;
 *  - a JSON object: `structuredContent`, plus its JSON text as a text block;
 *  - an array, number, boolean or null: its JSON text as a text block only. MCP's
 *    `structuredContent` must be an object (the official SDK clients reject anything else), and
 *    Sluice does not invent a wrapper key the tool never declared: return `{ items: [...] }` (and
 *    declare it in `outputSchema`) to give clients structured data;
 *  - nothing (`undefined`: a handler with no `return`): an empty content list.
 */
export type ToolOutput = CallToolResult | InputRequired | string | number | boolean | null | void | Record<string, unknown> | unknown[];

/** Turns whatever a handler returned into a CallToolResult, without a tool's outputSchema (an input-required result passes through). */
export function toCallToolResult(output: ToolOutput): CallToolResult | InputRequired {
  if (isInputRequired(output)) return output;
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }] };
  if (isFullResult(output)) return output;
  if (output === undefined) return { content: [] };
  const text = JSON.stringify(output) ?? 'null';
  if (!isRecord(output)) return { content: [{ type: 'text', text }] };
  // An object with toJSON (a Date) is sent as what toJSON returns: structured only if that is an object.
  const structured = wireValue(output, text);
  return isRecord(structured) ? { content: [{ type: 'text', text }], structuredContent: structured } : { content: [{ type: 'text', text }] };
}

/**
 * `value` as JSON.stringify sends it: for an object with a toJSON method (a Date, a class with its
 * own JSON form), the JSON value that method makes, since that and not the object is what the
 * client gets; anything else as it is. `text`: its JSON when the caller has it already. Throws
 * what JSON.stringify throws (a cycle under toJSON).
 */
export function wireValue(value: unknown, text?: string): unknown {
  if (value === null || typeof value !== 'object' || typeof (value as { toJSON?: unknown }).toJSON !== 'function') return value;
  const json = text ?? JSON.stringify(value);
  return json === undefined ? undefined : JSON.parse(json) as unknown;
}

/**
 * A handler's output as `await` sees it: a thenable that is not a Promise (a query builder such as
 * knex's or mongoose's, a Promise of another realm) becomes a Promise of its value, so it is waited
 * for, not sent as an object, as in the pool thread, which awaits. Anything else as it is.
 */
export function adoptThenable<T>(output: T | PromiseLike<T>): T | Promise<T> {
  if (output instanceof Promise || output === null || typeof output !== 'object' || typeof (output as { then?: unknown }).then !== 'function') return output as T | Promise<T>;
  return Promise.resolve(output);
}

/** An isError result about the tool itself (not its arguments), naming it. */
export function toolFailure(tool: { readonly name: string }, problem: string): CallToolResult {
  return { content: [{ type: 'text', text: `tool ${tool.name}: ${problem}` }], isError: true };
}

/** The isError result of what a handler threw (not a ProtocolError: that stays a JSON-RPC error), inline, in a pool thread or as a task. */
export function thrownResult(error: unknown): CallToolResult {
  return { content: [{ type: 'text', text: errorText(error) }], isError: true };
}

/** A full CallToolResult (anything with a `content` array), as opposed to a value to wrap. */
export function isFullResult(output: unknown): output is CallToolResult {
  return output !== null && typeof output === 'object' && !Array.isArray(output) && Array.isArray((output as CallToolResult).content);
}

/** A JSON object: what `structuredContent` must be. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Deepest result nesting walked (JSON.stringify itself would overflow the stack not much deeper). */
const kMaxResultDepth = 1000;
/**
 * Objects on the current path (a cycle is an object met again below itself); reused, emptied after
 * each walk. The first kNear levels are an array scanned by identity: a Set would give every fresh
 * result object an identity hash, which costs more than scanning a short path. Deeper levels go to the Set.
 */
const kNear = 32;
const near: object[] = [];
const ancestors = new Set<object>();

/**
 * Why `value` cannot be sent as JSON (a BigInt, a function, a symbol, a cycle; a Map, Set or Error,
 * which JSON would empty), with where, or undefined. Walks without allocating unless it finds
 * something; objects with toJSON (Date, Buffer) are left to JSON.stringify.
 */
export function unserialisable(value: unknown, root: string): string | undefined {
  const path = walk(value, 0);
  near.length = 0;
  if (ancestors.size > 0) ancestors.clear();
  return path === undefined ? undefined : `${path.what} at ${root}${path.at.reverse().join('')}${path.hint === undefined ? '' : ` (${path.hint})`}`;
}

interface Found { what: string; at: string[]; hint?: string }

/**
 * Objects JSON.stringify turns into `{}` without a word, their contents lost: refused like a
 * BigInt rather than sent empty. Asked only of objects with no own enumerable key (an Error given
 * enumerable fields is sent as those fields), and answered at once for a plain `{}`.
 */
function emptiedByJson(object: object): Found | undefined {
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto === Object.prototype || proto === null) return undefined;
  // By tag, not instanceof: a Map from another realm (vm, a pool thread's clone) is caught too.
  switch (Object.prototype.toString.call(object)) {
    case '[object Map]': return { what: 'a Map', at: [], hint: 'JSON would send it as {}: Object.fromEntries(map) sends its entries' };
    case '[object Set]': return { what: 'a Set', at: [], hint: 'JSON would send it as {}: [...set] sends its values' };
    case '[object WeakMap]': case '[object WeakSet]': return { what: 'a WeakMap or WeakSet', at: [], hint: 'JSON would send it as {}' };
    case '[object Error]': return { what: 'an Error', at: [], hint: 'JSON would send it as {}: throw it to report a failure, or send its message' };
    default: return undefined;
  }
}

function walk(value: unknown, depth: number): Found | undefined {
  switch (typeof value) {
    case 'string': case 'number': case 'boolean': case 'undefined': return undefined;
    case 'bigint': return { what: 'a BigInt', at: [] };
    case 'function': return { what: 'a function', at: [] };
    case 'symbol': return { what: 'a symbol', at: [] };
    default: break;
  }
  if (value === null) return undefined;
  const object = value as Record<string, unknown>;
  if (typeof object.toJSON === 'function') return undefined;
  for (let i = 0; i < depth && i < kNear; i++) if (near[i] === object) return { what: 'a circular reference', at: [] };
  if (depth > kNear && ancestors.has(object)) return { what: 'a circular reference', at: [] };
  if (depth >= kMaxResultDepth) return { what: `nesting deeper than ${kMaxResultDepth} levels`, at: [] };
  if (depth < kNear) near[depth] = object;
  else ancestors.add(object);
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      const found = walk(object[i], depth + 1);
      if (found !== undefined) {
        found.at.push(`[${i}]`);
        return found;
      }
    }
  } else {
    let keys = 0;
    for (const key in object) {
      if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
      keys++;
      const item = object[key];
      if (item === undefined) continue; // JSON leaves the property out
      const found = walk(item, depth + 1);
      if (found !== undefined) {
        found.at.push(`.${key}`);
        return found;
      }
    }
    // JSON sends an object with no own enumerable keys as {}: a Map, a Set or an Error would lose
    // everything in it. Only such objects are looked at more closely.
    if (keys === 0) {
      const emptied = emptiedByJson(object);
      if (emptied !== undefined) {
        if (depth >= kNear) ancestors.delete(object);
        return emptied;
      }
    }
  }
  if (depth >= kNear) ancestors.delete(object);
  return undefined;
}

/**
 * The text of anything a handler threw: an Error's message, a string, or a short rendering of any
 * other value (`Object.create(null)`, an object whose toString throws, a Symbol), never a throw.
 */
export function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  try {
    if (error instanceof Error && typeof error.message === 'string') return error.message;
  } catch {
    // a Proxy or a getter that throws: rendered below
  }
  return render(error, 500);
}

/**
 * Characters of a thrown value's description one log line keeps. A message may carry what a client
 * sent (`throw new Error(\`bad: ${args.text}\`)` with megabytes of text): log pipelines split or drop
 * lines that long, so the rest is cut and counted.
 */
export const kMaxFailureChars = 8192;

/** What a log line says of a thrown value: an Error's stack, else a safe rendering, at most kMaxFailureChars. Never throws. */
export function describeFailure(error: unknown): string {
  let text: string | undefined;
  try {
    if (error instanceof Error) text = error.stack ?? error.message;
  } catch {
    // a throwing stack or message getter: rendered below
  }
  text ??= errorText(error);
  return text.length <= kMaxFailureChars ? text : `${text.slice(0, kMaxFailureChars)}… (${text.length - kMaxFailureChars} more characters)`;
}
