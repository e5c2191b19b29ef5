/**
 * The content shapes a client receives, as the MCP wire carries them. The same shapes as the
 * server's (src/tools/result.ts `ContentBlock`, src/catalog `ResourceContents`, `PromptArgument`,
 * `PromptMessage`), written out here because the client imports nothing of the server: only
 * src/protocol/wire.ts and src/errors.ts (test/architecture/imports.test.ts).
 */

export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; [key: string]: unknown }
  | { type: 'resource'; resource: Record<string, unknown> };

export type ResourceContents =
  | { uri: string; mimeType?: string; text: string; _meta?: Record<string, unknown> }
  | { uri: string; mimeType?: string; blob: string; _meta?: Record<string, unknown> };

export interface PromptArgument {
  name: string;
  title?: string;
  description?: string;
  required?: boolean;
}

export interface PromptMessage {
  role: 'user' | 'assistant';
  content: ContentBlock;
}
