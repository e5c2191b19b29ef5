/**
 * The request options and result shapes of the client's methods: shared by client.ts and tasks.ts
 * (a module of its own, so neither imports the other for them).
 */
import type { ContentBlock, PromptArgument, PromptMessage, ResourceContents } from './content.js';

/** Options of every request method. */
export interface RequestOptions {
  /** Aborting rejects the call at once with a CancelledError carrying the reason, and tells the server. */
  signal?: AbortSignal;
  /**
   * Cancels the call (the same way) after this many milliseconds: 0 to 2^31 - 1, or Infinity for
   * none; anything else fails the call with `invalid_option`.
   */
  timeoutMs?: number;
  /**
   * Progress notifications for this call (a progress token is sent only when this is given). If it
   * throws, or returns a promise that rejects, the call is cancelled and rejects with that error.
   */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** Fields any result may carry besides those named (`_meta`; 2026-07-28 `resultType`, `ttlMs`, …). */
export interface ResultFields {
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A JSON Schema object schema, as tools/list publishes it. */
export interface ObjectSchema {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

/** One tool of a tools/list result. */
export interface ToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: ObjectSchema;
  outputSchema?: ObjectSchema;
  annotations?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export interface ListToolsResult extends ResultFields {
  tools: ToolInfo[];
  nextCursor?: string;
}

/**
 * A tools/call result. A Sluice server's `structuredContent` is always an object; `isError` results
 * carry the tool's failure as text. (A 2026-07-28 server may answer `resultType: 'input_required'`
 * with `inputRequests` instead, only to a client that declared the capabilities it asks for.)
 */
export interface CallToolResult extends ResultFields {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** One resource of a resources/list result. */
export interface ResourceInfo {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
  _meta?: Record<string, unknown>;
}

export interface ListResourcesResult extends ResultFields {
  resources: ResourceInfo[];
  nextCursor?: string;
}

/** One template of a resources/templates/list result. */
export interface ResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  _meta?: Record<string, unknown>;
}

export interface ListResourceTemplatesResult extends ResultFields {
  resourceTemplates: ResourceTemplateInfo[];
  nextCursor?: string;
}

export interface ReadResourceResult extends ResultFields {
  contents: ResourceContents[];
}

/** One prompt of a prompts/list result. */
export interface PromptInfo {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgument[];
  _meta?: Record<string, unknown>;
}

export interface ListPromptsResult extends ResultFields {
  prompts: PromptInfo[];
  nextCursor?: string;
}

export interface GetPromptResult extends ResultFields {
  description?: string;
  messages: PromptMessage[];
}

export interface CompleteResult extends ResultFields {
  completion: { values: string[]; total?: number; hasMore?: boolean };
}
