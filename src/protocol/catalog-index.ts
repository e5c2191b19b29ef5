import type { Catalog } from '../catalog/catalog.js';
import type { Prompt } from '../catalog/prompts.js';
import type { Resource, ResourceTemplate } from '../catalog/resources.js';
import type { Tool } from '../tools/define.js';
import { ErrorCode, ProtocolError } from './wire.js';

/** Items per page of a list result; the cursor is the next offset, opaque to clients. */
const kPageSize = 100;

type Entry = Record<string, unknown>;

/**
 * The catalog as the protocol serves it, built once per engine: lookups by name or URI, and the
 * list entries (only the fields a list result carries) with their paging.
 */
export class CatalogIndex {
  readonly tools = new Map<string, Tool>();
  readonly resources = new Map<string, Resource>();
  readonly prompts = new Map<string, Prompt>();
  readonly templates: readonly ResourceTemplate[];
  readonly toolList: readonly Entry[];
  /** The tool list with each tool's `execution.taskSupport` (2025-11-25, when the server offers tasks). */
  readonly toolListWithExecution: readonly Entry[];
  readonly resourceList: readonly Entry[];
  readonly templateList: readonly Entry[];
  readonly promptList: readonly Entry[];

  constructor(catalog: Catalog) {
    for (const tool of catalog.tools) this.tools.set(tool.name, tool);
    for (const r of catalog.resources) this.resources.set(r.uri, r);
    for (const p of catalog.prompts) this.prompts.set(p.name, p);
    this.templates = catalog.templates;
    this.resourceList = catalog.resources.map((r) => pick(r, ['uri', 'name', 'title', 'description', 'mimeType']));
    this.templateList = catalog.templates.map((t) => pick(t, ['uriTemplate', 'name', 'title', 'description', 'mimeType']));
    this.promptList = catalog.prompts.map((p) => pick(p, ['name', 'title', 'description', 'arguments']));
    this.toolList = catalog.tools.map((t) => {
      const entry: Entry = { name: t.name, description: t.description, inputSchema: t.inputSchema };
      if (t.title !== undefined) entry.title = t.title;
      if (t.outputSchema !== undefined) entry.outputSchema = t.outputSchema;
      if (t.annotations !== undefined) entry.annotations = t.annotations;
      return entry;
    });
    this.toolListWithExecution = catalog.tools.map((t, i) => t.taskSupport === undefined ? this.toolList[i] : { ...this.toolList[i], execution: { taskSupport: t.taskSupport } });
  }

  /** Whether any resource or template is offered. */
  get hasResources(): boolean {
    return this.resources.size + this.templates.length > 0;
  }

  get hasPrompts(): boolean {
    return this.prompts.size > 0;
  }

  /** One page of `all` under `key`, with an opaque cursor to the next (era decorations are the caller's). */
  page(params: Record<string, unknown> | undefined, key: string, all: readonly Entry[]): Entry {
    let offset = 0;
    const cursor = params?.cursor;
    if (cursor !== undefined) {
      const decoded = typeof cursor === 'string' && /^[A-Za-z0-9_-]{1,16}$/.test(cursor) ? Number(Buffer.from(cursor, 'base64url').toString('latin1').replace(/^o/, '')) : NaN;
      if (!Number.isSafeInteger(decoded) || decoded < 0 || decoded > all.length) throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid cursor');
      offset = decoded;
    }
    const result: Entry = { [key]: offset === 0 && all.length <= kPageSize ? all : all.slice(offset, offset + kPageSize) };
    if (offset + kPageSize < all.length) result.nextCursor = Buffer.from(`o${offset + kPageSize}`, 'latin1').toString('base64url');
    return result;
  }
}

function pick(o: object, keys: string[]): Entry {
  return Object.fromEntries(keys.filter((k) => (o as Entry)[k] !== undefined).map((k) => [k, (o as Entry)[k]]));
}
