/**
 * 2026-07-28 `Mcp-Param-{Name}` headers: a tools/call of a tool whose inputSchema annotates
 * properties with `x-mcp-header` must mirror each present value in its header (so intermediaries
 * can route on it); the server decodes each one and compares it with the body. Also the header
 * value decoding shared with `Mcp-Name` (modern.ts).
 */
import type { Tool } from '../../tools/define.js';
import { headerSpecsOf, headerText, valueAt } from '../../tools/header-annotations.js';
import type { HeaderSpec } from '../../tools/header-annotations.js';
import { ErrorCode, ProtocolError } from '../../protocol/wire.js';
import type { Exchange } from './exchange.js';

/** The sentinel of a value that is not header-safe (spec: "Value Encoding"). */
const kPrefix = '=?base64?';
const kSuffix = '?=';
/** Canonical base64: the standard alphabet, length a multiple of 4 (checked apart), padding only at the end. */
const kBase64 = /^[A-Za-z0-9+/]*(?:[AEIMQUYcgkosw048]=|[AQgw]==)?$/;
const kUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A header value as the sender meant it: OWS (spaces, tabs) around it trimmed (RFC 9110 §5.5), and
 * a `=?base64?…?=` value decoded. The payload must be canonical base64 (standard alphabet, correct
 * padding, zero trailing bits: one text has one encoding, so a proxy and the server cannot read it
 * differently) of valid UTF-8; undefined when it is not. A value lacking the prefix or the suffix
 * is taken literally.
 */
export function decodeHeaderValue(raw: string): string | undefined {
  const value = trimOws(raw);
  if (value.length < kPrefix.length + kSuffix.length || !value.startsWith(kPrefix) || !value.endsWith(kSuffix)) return value;
  const payload = value.slice(kPrefix.length, value.length - kSuffix.length);
  // The regex pins the character before the padding to one with zero trailing bits.
  if (payload.length % 4 !== 0 || !kBase64.test(payload)) return undefined;
  try {
    return kUtf8.decode(Buffer.from(payload, 'base64'));
  } catch {
    return undefined;
  }
}

/** `value` without the spaces and tabs around it. */
export function trimOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && (value.charCodeAt(start) === 0x20 || value.charCodeAt(start) === 0x09)) start++;
  while (end > start && (value.charCodeAt(end - 1) === 0x20 || value.charCodeAt(end - 1) === 0x09)) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function mismatch(message: string): ProtocolError {
  return new ProtocolError(ErrorCode.HeaderMismatch, message, undefined, 400);
}

/**
 * The `x-mcp-header` specs of a catalog's tools, by tool name (only tools that have some), and the
 * check of a tools/call's headers against them. Built once per endpoint: the catalog is fixed for
 * an engine's life.
 */
export class ParamHeaders {
  readonly #byTool = new Map<string, readonly HeaderSpec[]>();
  /** Every annotated header name, lower-case (`mcp-param-region`). */
  readonly names: ReadonlySet<string>;

  constructor(tools: readonly Tool[]) {
    const names = new Set<string>();
    for (const tool of tools) {
      const specs = headerSpecsOf(tool);
      if (specs.length === 0) continue;
      this.#byTool.set(tool.name, specs);
      for (const spec of specs) names.add(spec.header);
    }
    this.names = names;
  }

  /** Whether any tool has an annotation (else `check` never refuses). */
  get any(): boolean {
    return this.#byTool.size > 0;
  }

  /**
   * The refusal of a tools/call whose `Mcp-Param-*` headers do not mirror its arguments, if any.
   * A header whose argument is absent from the body is not required (and not compared).
   */
  check(ex: Exchange, params: Record<string, unknown> | undefined): ProtocolError | undefined {
    if (this.#byTool.size === 0) return undefined;
    const name = params?.name;
    const specs = typeof name === 'string' ? this.#byTool.get(name) : undefined;
    if (specs === undefined) return undefined;
    const args = params?.arguments;
    for (const spec of specs) {
      const value = valueAt(args, spec.path);
      if (value === undefined || value === null) continue;
      const header = `Mcp-Param-${spec.name}`;
      const expected = headerText(value);
      // Not a value a client can mirror (a float, an unsafe integer, an object): the tool's
      // argument check refuses the type; an integer past 2^53 cannot be compared exactly.
      if (expected === undefined) {
        if (spec.type === 'integer' && typeof value === 'number' && Number.isInteger(value)) {
          return mismatch(`${header} cannot be checked: arguments.${spec.path.join('.')} is not a JS-safe integer`);
        }
        continue;
      }
      const raw = ex.header(spec.header);
      if (raw === undefined) return mismatch(`${header} header is required: arguments.${spec.path.join('.')} is in the body`);
      const sent = decodeHeaderValue(raw);
      if (sent === undefined) return mismatch(`${header} header is not valid =?base64?…?= (canonical base64 of UTF-8)`);
      if (sent !== expected) return mismatch(`${header} header does not match arguments.${spec.path.join('.')} in the body`);
    }
    return undefined;
  }
}
