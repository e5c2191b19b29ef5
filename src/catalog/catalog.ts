import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SluiceError } from '../errors.js';
import { defineTool, isDefinedTool } from '../tools/define.js';
import type { Tool, ToolDefinition } from '../tools/define.js';
import type { Prompt } from './prompts.js';
import type { Resource, ResourceTemplate } from './resources.js';

/** Everything a server offers. A module may export one array mixing tools, resources, templates and prompts. */
export interface Catalog {
  readonly tools: readonly Tool[];
  readonly resources: readonly Resource[];
  readonly templates: readonly ResourceTemplate[];
  readonly prompts: readonly Prompt[];
}

type Defined = Tool | Resource | ResourceTemplate | Prompt;

/** Sorts what a module (or an array) exports into a catalog; names and URIs must be unique. */
export function collectCatalog(exported: unknown): Catalog {
  const list = Array.isArray(exported) ? exported : exported !== null && typeof exported === 'object' ? Object.values(exported) : [];
  const items = list.filter((x): x is Defined => x !== null && typeof x === 'object' && typeof (x as { kind?: unknown }).kind === 'string' && (x as { kind: string }).kind.startsWith('sluice/'));
  const catalog = {
    // A tool not made by this copy of defineTool (a hand-made object, another copy of Sluice) is
    // checked and compiled now, so a bad one fails at start, naming the tool, never at a call.
    tools: items.filter((x): x is Tool => x.kind === 'sluice/tool').map((t) => isDefinedTool(t) ? t : defineTool(t as unknown as ToolDefinition)),
    resources: items.filter((x): x is Resource => x.kind === 'sluice/resource'),
    templates: items.filter((x): x is ResourceTemplate => x.kind === 'sluice/resource-template'),
    prompts: items.filter((x): x is Prompt => x.kind === 'sluice/prompt'),
  };
  unique('tool', catalog.tools.map((t) => t.name));
  unique('resource', catalog.resources.map((r) => r.uri));
  unique('prompt', catalog.prompts.map((p) => p.name));
  return catalog;
}

function unique(what: string, keys: string[]): void {
  const seen = new Set<string>();
  for (const k of keys) {
    if (seen.has(k)) throw new SluiceError('invalid_option', `two ${what}s are named ${k}`);
    seen.add(k);
  }
}

/** A tools module named by URL or path, as a URL string every thread can import. */
export function toolsModuleUrl(spec: string | URL): string {
  const text = spec instanceof URL ? spec.href : spec;
  return /^[a-z]+:/i.test(text) ? text : pathToFileURL(resolvePath(text)).href;
}

/** Imports a tools module: its catalog (default export, else `tools`, else the module) and its exports. */
export async function importToolsModule(url: string): Promise<{ catalog: Catalog; exports: Record<string, unknown> }> {
  const exports = (await import(url)) as Record<string, unknown>;
  return { catalog: collectCatalog(exports.default ?? exports.tools ?? exports), exports };
}
