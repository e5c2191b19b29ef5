import { SluiceError } from '../errors.js';
import type { InputRequired, ToolContext } from '../tools/context.js';
import { resourceContentsProblem } from '../tools/content-shape.js';
import { scopesField } from '../tools/define.js';

/** One item of a resources/read result. */
export type ResourceContents =
  | { uri: string; mimeType?: string; text: string; _meta?: Record<string, unknown> }
  | { uri: string; mimeType?: string; blob: string; _meta?: Record<string, unknown> };

/**
 * What a read handler may return: full contents, a string (text), or bytes (a base64 blob): a
 * Uint8Array or Buffer, any other typed array or DataView (the bytes it views), or an ArrayBuffer.
 */
export type ReadOutput = ResourceContents[] | ResourceContents | string | ArrayBufferView | ArrayBuffer | InputRequired;

export interface ResourceDefinition {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** OAuth scopes a resources/read of it needs (with `auth`; besides the server's). */
  scopes?: readonly string[];
  read(ctx: ToolContext): ReadOutput | PromiseLike<ReadOutput>;
}

export interface ResourceTemplateDefinition {
  /** RFC 6570 level-1 template, e.g. `test://template/{id}/data`. */
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** OAuth scopes a resources/read through it needs (with `auth`; besides the server's). */
  scopes?: readonly string[];
  read(uri: string, variables: Record<string, string>, ctx: ToolContext): ReadOutput | PromiseLike<ReadOutput>;
  /** Completions for a template variable (completion/complete with ref/resource). */
  complete?: Record<string, (value: string) => string[] | PromiseLike<string[]>>;
}

export type Resource = Readonly<ResourceDefinition> & { readonly kind: 'sluice/resource' };
export type ResourceTemplate = Readonly<ResourceTemplateDefinition> & { readonly kind: 'sluice/resource-template'; readonly pattern: RegExp; readonly variables: readonly string[] };

export function defineResource(definition: ResourceDefinition): Resource {
  if (typeof definition?.uri !== 'string' || definition.uri === '') throw new SluiceError('invalid_definition', 'a resource needs a uri');
  if (typeof definition.name !== 'string') throw new SluiceError('invalid_definition', `resource ${definition.uri}: name must be a string`);
  if (typeof definition.read !== 'function') throw new SluiceError('invalid_definition', `resource ${definition.uri}: read must be a function`);
  return Object.freeze({ ...definition, ...scopesField(`resource ${definition.uri}`, definition.scopes), kind: 'sluice/resource' as const });
}

export function defineResourceTemplate(definition: ResourceTemplateDefinition): ResourceTemplate {
  if (typeof definition?.uriTemplate !== 'string') throw new SluiceError('invalid_definition', 'a resource template needs a uriTemplate');
  if (typeof definition.read !== 'function') throw new SluiceError('invalid_definition', `template ${definition.uriTemplate}: read must be a function`);
  const scopes = scopesField(`template ${definition.uriTemplate}`, definition.scopes);
  const variables: string[] = [];
  let source = '^';
  let last = 0;
  for (const m of definition.uriTemplate.matchAll(/\{([A-Za-z0-9_]+)\}/g)) {
    source += escape(definition.uriTemplate.slice(last, m.index)) + '([^/?#]+)';
    variables.push(m[1]);
    last = (m.index ?? 0) + m[0].length;
  }
  source += `${escape(definition.uriTemplate.slice(last))}$`;
  return Object.freeze({ ...definition, ...scopes, kind: 'sluice/resource-template' as const, pattern: new RegExp(source), variables });
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Normalises what a read handler returned: a string is the text, bytes the base64 blob. Throws (a
 * failure of the read, logged; the client gets an internal error) when it returned anything else
 * that is not resource contents, naming the resource or template (not the URI the client sent) and
 * what is wrong: the official clients check results against the protocol's schema and would fail
 * the call without saying why.
 */
export function toContents(source: Resource | ResourceTemplate, uri: string, output: Exclude<ReadOutput, InputRequired>): ResourceContents[] {
  const mimeType = source.mimeType;
  const base = mimeType === undefined ? { uri } : { uri, mimeType };
  if (typeof output === 'string') return [{ ...base, text: output }];
  if (ArrayBuffer.isView(output)) return [{ ...base, blob: Buffer.from(output.buffer, output.byteOffset, output.byteLength).toString('base64') }];
  if (output instanceof ArrayBuffer) return [{ ...base, blob: Buffer.from(output).toString('base64') }];
  const contents: unknown[] = Array.isArray(output) ? output : [output];
  for (let i = 0; i < contents.length; i++) {
    const problem = resourceContentsProblem(contents[i]);
    if (problem !== undefined) {
      const where = Array.isArray(output) ? `$[${i}]` : '$';
      const name = source.kind === 'sluice/resource' ? `resource ${source.uri}` : `template ${source.uriTemplate}`;
      throw new SluiceError('invalid_result', `${name}: the read returned something that is not resource contents: ${where}${problem}`);
    }
  }
  return contents as ResourceContents[];
}
