import { render } from '../registry/reason.js';
import { SluiceError } from '../errors.js';
import { isInputRequired } from './context.js';
import type { InputRequired, ToolContext } from './context.js';
import type { JsonSchema } from './schema.js';

/** MCP content blocks a tool may return (the common ones; others pass through as given). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; [key: string]: unknown }
  | { type: 'resource'; resource: Record<string, unknown> };

/** A tools/call result. */
export interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: unknown;
  isError?: boolean;
}

/**
 * What a handler may return: a full CallToolResult, a string (one text block), or any other
 * JSON value (sent as structuredContent plus its JSON text).
 */
export type ToolOutput = CallToolResult | InputRequired | string | number | boolean | null | Record<string, unknown> | unknown[];

export interface ToolDefinition<Args extends Record<string, unknown> = Record<string, unknown>> {
  /** 1–128 characters of [A-Za-z0-9_.-]. */
  name: string;
  title?: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). Checked before the handler runs. */
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema;
  annotations?: Record<string, unknown>;
  /**
   * Run in the CPU pool (piscina) instead of the HTTP worker's event loop. The tool must then be
   * defined in the tools module the server was given, so the pool thread can load it.
   */
  pool?: boolean;
  /**
   * Client capabilities the tool needs (2026-07-28): a request from a client that did not declare
   * them is refused with -32021 and HTTP 400, e.g. `{ sampling: {} }`.
   */
  requires?: Record<string, Record<string, unknown>>;
  handler(args: Args, ctx: ToolContext): ToolOutput | Promise<ToolOutput>;
}

/** A validated, frozen tool. */
export type Tool = Readonly<ToolDefinition<Record<string, unknown>>> & { readonly kind: 'sluice/tool' };

const kName = /^[A-Za-z0-9_.-]{1,128}$/;

/** Checks a tool definition once, up front (piscina's "validate at the facade"). */
export function defineTool<Args extends Record<string, unknown> = Record<string, unknown>>(definition: ToolDefinition<Args>): Tool {
  if (definition === null || typeof definition !== 'object') throw new SluiceError('invalid_option', 'a tool definition must be an object');
  if (typeof definition.name !== 'string' || !kName.test(definition.name)) {
    throw new SluiceError('invalid_option', `tool name must be 1-128 characters of [A-Za-z0-9_.-], got ${JSON.stringify(definition.name)}`);
  }
  if (typeof definition.description !== 'string') throw new SluiceError('invalid_option', `tool ${definition.name}: description must be a string`);
  const schema = definition.inputSchema;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || (schema.type !== undefined && schema.type !== 'object')) {
    throw new SluiceError('invalid_option', `tool ${definition.name}: inputSchema must be an object schema`);
  }
  if (typeof definition.handler !== 'function') throw new SluiceError('invalid_option', `tool ${definition.name}: handler must be a function`);
  return Object.freeze({ ...(definition as unknown as ToolDefinition), kind: 'sluice/tool' as const });
}

/** Turns whatever a handler returned into a CallToolResult (an input-required result passes through). */
export function toCallToolResult(output: ToolOutput): CallToolResult | InputRequired {
  if (isInputRequired(output)) return output;
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }] };
  if (output !== null && typeof output === 'object' && !Array.isArray(output) && Array.isArray((output as CallToolResult).content)) {
    return output as CallToolResult;
  }
  const text = JSON.stringify(output) ?? 'null';
  return output !== null && typeof output === 'object'
    ? { content: [{ type: 'text', text }], structuredContent: output }
    : { content: [{ type: 'text', text }] };
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
