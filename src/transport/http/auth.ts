/**
 * The resource-server gate over HTTP: which scopes a request's target needs (the catalog's
 * per-item `scopes`), the Protected Resource Metadata responses, and the refusal responses. The
 * decisions themselves are the AuthGate's (src/auth/).
 */
import { kRootMetadataPath } from '../../auth/metadata.js';
import type { AuthGate } from '../../auth/gate.js';
import type { AuthRefusal } from '../../auth/refusal.js';
import type { Catalog } from '../../catalog/catalog.js';

type Headers = readonly (readonly [string, string])[];

/**
 * PRM is public and read by browser-based clients before they have any token: readable from any
 * origin, cacheable for a while.
 */
const kMetadataHeaders: Headers = [
  ['content-type', 'application/json'],
  ['access-control-allow-origin', '*'],
  ['cache-control', 'public, max-age=3600'],
];

interface TemplateScopes { readonly pattern: RegExp; readonly scopes: readonly string[] }

export class HttpAuth {
  readonly gate: AuthGate;
  readonly #tools = new Map<string, readonly string[]>();
  readonly #prompts = new Map<string, readonly string[]>();
  readonly #resources = new Map<string, readonly string[]>();
  readonly #templates: TemplateScopes[] = [];
  readonly #metadata: string;

  constructor(gate: AuthGate, catalog: Catalog) {
    this.gate = gate;
    const all = new Set<string>();
    const note = <K>(map: Map<K, readonly string[]>, key: K, scopes: readonly string[] | undefined): void => {
      if (scopes === undefined || scopes.length === 0) return;
      map.set(key, scopes);
      for (const s of scopes) all.add(s);
    };
    for (const tool of catalog.tools) note(this.#tools, tool.name, tool.scopes);
    for (const prompt of catalog.prompts) note(this.#prompts, prompt.name, prompt.scopes);
    for (const resource of catalog.resources) note(this.#resources, resource.uri, resource.scopes);
    // Every template, scoped or not: the first that matches a URI is the one that serves it.
    if (catalog.templates.some((t) => t.scopes !== undefined && t.scopes.length > 0)) {
      for (const template of catalog.templates) {
        this.#templates.push({ pattern: template.pattern, scopes: template.scopes ?? [] });
        for (const s of template.scopes ?? []) all.add(s);
      }
    }
    this.#metadata = gate.metadata(all);
  }

  /** Whether `path` is one of the two places PRM is served (the path-aware one and the root one). */
  isMetadataPath(path: string): boolean {
    return path === this.gate.metadataPath || path === kRootMetadataPath;
  }

  get metadataHeaders(): Headers {
    return kMetadataHeaders;
  }

  get metadataBody(): string {
    return this.#metadata;
  }

  /**
   * The item scopes a request's target needs (tools/call, resources/read, prompts/get), or
   * undefined when it needs none beyond the server's. A concrete resource first, then the templates
   * (the same order resources/read resolves a URI in).
   */
  itemScopes(method: string, params: Record<string, unknown> | undefined): readonly string[] | undefined {
    switch (method) {
      case 'tools/call': {
        const name = params?.name;
        return typeof name === 'string' ? this.#tools.get(name) : undefined;
      }
      case 'prompts/get': {
        const name = params?.name;
        return typeof name === 'string' ? this.#prompts.get(name) : undefined;
      }
      case 'resources/read': {
        const uri = params?.uri;
        if (typeof uri !== 'string') return undefined;
        const scopes = this.#resources.get(uri);
        if (scopes !== undefined) return scopes;
        for (const template of this.#templates) if (template.pattern.test(uri)) return template.scopes.length > 0 ? template.scopes : undefined;
        return undefined;
      }
      default:
        return undefined;
    }
  }

  /** The headers of a refusal: its challenge (none for a 503, which says when to retry instead). */
  static refusalHeaders(refusal: AuthRefusal, extra: Headers): Headers {
    if (refusal.challenge === undefined) return [['content-type', 'application/json'], ['retry-after', '5'], ...extra];
    return [['content-type', 'application/json'], ['www-authenticate', refusal.challenge], ...extra];
  }
}
