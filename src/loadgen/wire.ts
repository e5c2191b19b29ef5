/**
 * The MCP messages a load run sends, and what their answers mean: request bodies for both eras,
 * the per-request headers, an incremental SSE reader and the classification of an answer into
 * the outcome kinds the summary counts.
 */
import { headerValue } from '../client/param-headers.js';
import { parseMessage as parseClientMessage } from '../client/transport.js';
import { kMetaClientCapabilities, kMetaClientInfo, kMetaProtocolVersion, kModernVersion } from '../protocol/wire.js';
import type { BenchMethod, Negotiated } from './options.js';

export const kClientInfo = { name: 'sluice-bench', version: '1' };

/** A JSON-RPC message as read off the wire (anything beyond the envelope is unknown). */
export interface Message {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

/** The params of one load request (without the era's _meta). */
export function requestParams(method: BenchMethod, name: string | undefined, args: Record<string, unknown>): Record<string, unknown> {
  switch (method) {
    case 'tools/call': return { name, arguments: args };
    case 'prompts/get': return { name, arguments: args };
    case 'resources/read': return { uri: name };
    default: return {};
  }
}

/** The JSON text of a request (modern era: the client's declarations ride in _meta on every request). */
export function requestBody(id: number | string, method: string, params: Record<string, unknown>, era: Negotiated['era']): string {
  const withMeta = era === 'modern'
    ? { ...params, _meta: { ...(params._meta as Record<string, unknown> | undefined), [kMetaProtocolVersion]: kModernVersion, [kMetaClientCapabilities]: {}, [kMetaClientInfo]: kClientInfo } }
    : params;
  return JSON.stringify({ jsonrpc: '2.0', id, method, params: withMeta });
}

export function notificationBody(method: string, params?: Record<string, unknown>): string {
  return JSON.stringify(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params });
}

/** The param each named method's Mcp-Name header repeats. */
const kNamed: Record<string, string> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

/** The MCP headers of one request of this era (the session's id is added by the caller). */
export function mcpHeaders(method: string, params: Record<string, unknown>, negotiated: Negotiated | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (negotiated === undefined) return headers;
  headers['mcp-protocol-version'] = negotiated.version;
  if (negotiated.era === 'modern' && !method.startsWith('notifications/')) {
    headers['mcp-method'] = method;
    const field = kNamed[method];
    const value = field === undefined ? undefined : params[field];
    if (typeof value === 'string') headers['mcp-name'] = headerValue(value);
    if (method === 'tools/call' && negotiated.paramHeaders !== undefined) Object.assign(headers, negotiated.paramHeaders);
  }
  return headers;
}

/** What became of one request. */
export type OutcomeKind = 'ok' | 'http' | 'rpc' | 'tool' | 'timeout' | 'reset' | 'invalid' | 'no-answer';

export interface Outcome {
  kind: OutcomeKind;
  /** http: the status; rpc: the JSON-RPC code; otherwise undefined. */
  code?: number;
  /** For people: what was wrong (first error of a kind is kept). */
  detail?: string;
  /** The result, when kind is ok or tool. */
  result?: Record<string, unknown>;
}

/** The outcome an answer to request `id` stands for. */
export function classify(message: Message): Outcome {
  if (message.error !== undefined) {
    const error = message.error as { code?: unknown; message?: unknown } | null;
    const code = typeof error?.code === 'number' ? error.code : undefined;
    return { kind: 'rpc', code, detail: typeof error?.message === 'string' ? error.message : 'a JSON-RPC error' };
  }
  const result = message.result;
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return { kind: 'invalid', detail: 'a response without a result object' };
  if ((result as { isError?: unknown }).isError === true) return { kind: 'tool', result: result as Record<string, unknown>, detail: toolText(result as Record<string, unknown>) };
  return { kind: 'ok', result: result as Record<string, unknown> };
}

function toolText(result: Record<string, unknown>): string {
  const content = result.content;
  const first = Array.isArray(content) ? (content[0] as { text?: unknown } | undefined) : undefined;
  return typeof first?.text === 'string' ? first.text.slice(0, 200) : 'the tool answered isError';
}

/** Parses a JSON-RPC message; undefined when the text is not a JSON object (the client's parser). */
export function parseMessage(text: string): Message | undefined {
  return parseClientMessage(text) as Message | undefined;
}

/** Is this message the answer (result or error) to request `id`? */
export function answers(message: Message, id: number | string): boolean {
  return message.id === id && (message.result !== undefined || message.error !== undefined);
}
