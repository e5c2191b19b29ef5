import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

/** The names a catalog serves: tool and prompt names, resource URIs and URI templates. Structured-cloneable. */
export interface CatalogNames {
  readonly tools: readonly string[];
  readonly resources: readonly string[];
  readonly prompts: readonly string[];
}

export function catalogNames(catalog: Catalog): CatalogNames {
  return {
    tools: catalog.tools.map((t) => t.name),
    resources: [...catalog.resources.map((r) => r.uri), ...catalog.templates.map((t) => t.uriTemplate)],
    prompts: catalog.prompts.map((p) => p.name),
  };
}

/** Names listed in a difference before "and N more": a module may define thousands. */
const kNamesShown = 5;

/**
 * How two threads' catalogs differ, as a phrase for an error message (`names` say which thread is
 * which), or undefined when they serve the same names in the same order. Every thread imports the
 * tools module itself, so a module that branches on its thread (or on anything that changes while
 * threads start) would have each thread list, and serve, something else.
 */
export function catalogDifference(first: CatalogNames, other: CatalogNames, names: readonly [string, string] = ['the first', 'the other']): string | undefined {
  for (const kind of ['tools', 'resources', 'prompts'] as const) {
    const a = first[kind];
    const b = other[kind];
    if (a.length === b.length && a.every((name, i) => name === b[i])) continue;
    const inB = new Set(b);
    const inA = new Set(a);
    const onlyA = a.filter((name) => !inB.has(name));
    const onlyB = b.filter((name) => !inA.has(name));
    if (onlyA.length === 0 && onlyB.length === 0) return `${kind}: the same names in another order (${listed(a)} against ${listed(b)})`;
    const parts: string[] = [];
    if (onlyA.length > 0) parts.push(`${listed(onlyA)} only in ${names[0]}`);
    if (onlyB.length > 0) parts.push(`${listed(onlyB)} only in ${names[1]}`);
    return `${kind}: ${parts.join('; ')}`;
  }
  return undefined;
}

/**
 * The error for a tools module that defines different things in two threads (HTTP workers, or a
 * pool thread and its HTTP worker): `where` says which threads, `differs` is catalogDifference's phrase.
 */
export function catalogMismatch(moduleUrl: string, where: string, differs: string): string {
  return `the tools module ${toolsModuleLabel(moduleUrl)} defines different things ${where} (${differs}). Each thread imports it, `
    + 'and each must define the same tools, resources and prompts: a module that branches on its thread (threadId, isMainThread) '
    + 'or on what changes while the threads start would serve something else in each';
}

/** Names as a message lists them: quoted, the first few, then how many more. */
function listed(names: readonly string[]): string {
  const shown = names.slice(0, kNamesShown).map((name) => JSON.stringify(name)).join(', ');
  return names.length > kNamesShown ? `${shown} and ${names.length - kNamesShown} more` : shown;
}

/**
 * A tools module named by URL or path, as a URL string every thread can import. A relative path
 * resolves against the current working directory (not against Sluice's own files).
 */
export function toolsModuleUrl(spec: string | URL): string {
  const text = spec instanceof URL ? spec.href : spec;
  // A URL has a scheme of two letters or more (a one-letter "scheme" is a Windows drive).
  return /^[a-z][a-z0-9+.-]+:/i.test(text) ? text : pathToFileURL(resolvePath(process.cwd(), text)).href;
}

/** A tools module as a person reads it in a message: its file path, else its URL. */
export function toolsModuleLabel(url: string): string {
  try {
    return url.startsWith('file:') ? fileURLToPath(url) : url;
  } catch {
    return url;
  }
}

/**
 * Imports a tools module: its catalog (default export, else `tools`, else the module) and its exports.
 * Rejects with `tools_module_failed` when the module cannot be loaded (the message names the file
 * and line at fault, and what to do about TypeScript) or exports no Sluice definitions.
 */
export async function importToolsModule(url: string): Promise<{ catalog: Catalog; exports: Record<string, unknown> }> {
  let exports: Record<string, unknown>;
  try {
    exports = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new SluiceError('tools_module_failed', describeLoadFailure(url, error), { cause: error });
  }
  const exported = exports.default ?? exports.tools ?? exports;
  let catalog: Catalog;
  try {
    catalog = collectCatalog(exported);
  } catch (error) {
    if (error instanceof SluiceError) throw new SluiceError(error.code, `the tools module ${toolsModuleLabel(url)}: ${error.message}`, { cause: error });
    throw error;
  }
  if (catalog.tools.length + catalog.resources.length + catalog.templates.length + catalog.prompts.length === 0) {
    throw new SluiceError('tools_module_failed', `the tools module ${toolsModuleLabel(url)} exports no Sluice tools, resources or prompts (${describeExports(exports)}). Export what defineTool, defineResource, defineResourceTemplate or definePrompt return, or a default export that is an array of them.`);
  }
  return { catalog, exports };
}

/** What a module exports, for the "no definitions" message. */
function describeExports(exports: Record<string, unknown>): string {
  const names = Object.keys(exports);
  if (names.length === 0) return 'it exports nothing';
  const shown = names.slice(0, 12).map((name) => `${name} (${describeValue(exports[name])})`);
  return `it exports ${shown.join(', ')}${names.length > shown.length ? `, and ${names.length - shown.length} more` : ''}`;
}

function describeValue(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}${value.length > 0 ? ' with no definition in it' : ''}`;
  if (value === null) return 'null';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object') {
    const kind = (value as { kind?: unknown }).kind;
    return typeof kind === 'string' ? `an object of kind ${JSON.stringify(kind)}` : 'an object';
  }
  return `a ${typeof value}`;
}

const kTypeScriptFile = /\.[cm]?tsx?$/i;

/** The message of a module that failed to load: what failed, where (file:line), and what to do. */
function describeLoadFailure(url: string, error: unknown): string {
  const label = toolsModuleLabel(url);
  if (!(error instanceof Error)) return `the tools module ${label} failed to load: ${String(error)}`;
  const code = (error as { code?: unknown }).code;
  if (code === 'ERR_MODULE_NOT_FOUND' && url.startsWith('file:') && !existsSync(label)) {
    return `the tools module ${label} does not exist (a relative --tools path resolves against the current directory, ${process.cwd()})`;
  }
  const where = errorLocation(error, url);
  const lines = [`the tools module ${label} failed to load: ${error.name}${typeof code === 'string' ? ` [${code}]` : ''}: ${error.message}`];
  if (where !== undefined) lines.push(`    at ${where.location}`, ...where.snippet.map((l) => `    ${l}`));
  const hint = typescriptHint(error, where?.location);
  if (hint !== undefined) lines.push(hint);
  return lines.join('\n');
}

interface Location {
  /** `path:line` or `path:line:column`. */
  readonly location: string;
  /** The source line and its caret, when known. */
  readonly snippet: readonly string[];
}

/** Sluice's own files: a frame there (defineTool refusing a definition) is not the user's line. */
const kOwnDir = new URL('..', import.meta.url).href;

/** Where in the user's files an import-time error comes from. */
function errorLocation(error: Error, url: string): Location | undefined {
  const stack = typeof error.stack === 'string' ? error.stack : '';
  // Node puts a source location, the line and a caret before some errors' stacks ("arrow message").
  const arrow = /^((?:file:\/\/|\/|[A-Za-z]:\\)[^\n]*?):(\d+)\n([^\n]*)\n([ \t]*\^+)[ \t]*\n/.exec(stack);
  if (arrow !== null) return { location: `${toolsModuleLabel(arrow[1]!)}:${arrow[2]}`, snippet: [arrow[3]!, arrow[4]!] };
  // An error thrown while the module ran: its first frame in a file of the user's.
  const frames = [...stack.matchAll(/^\s+at (?:.*?\()?((?:file:\/\/|\/)[^\s()]+?):(\d+):(\d+)\)?$/gm)];
  const frame = frames.find((f) => !toUrl(f[1]!).startsWith(kOwnDir)) ?? frames[0];
  if (frame !== undefined) return { location: `${toolsModuleLabel(toUrl(frame[1]!))}:${frame[2]}:${frame[3]}`, snippet: [] };
  // A module that cannot be found: the importing file, and the line that names it.
  const missing = /^Cannot find (?:package|module) '([^']+)' imported from (.+)$/.exec(error.message);
  if (missing !== null) {
    const importer = toolsModuleLabel(toUrl(missing[2]!));
    const line = lineNaming(importer, missing[1]!);
    return { location: line === undefined ? importer : `${importer}:${line}`, snippet: [] };
  }
  // A syntax error V8 reported with no location (the module's own source did not parse):
  // `node --check` the module and the relative modules it imports, running none of them.
  if (error.name === 'SyntaxError' && url.startsWith('file:')) return syntaxErrorLocation(fileURLToPath(url), new Set());
  return undefined;
}

function toUrl(pathOrUrl: string): string {
  return pathOrUrl.startsWith('file:') ? pathOrUrl : pathToFileURL(pathOrUrl).href;
}

/** The 1-based line of `file` that names `specifier` (or, for a resolved path, its file name) in quotes. */
function lineNaming(file: string, specifier: string): number | undefined {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const wanted = specifier.startsWith('/') || specifier.startsWith('file:') ? specifier.slice(specifier.lastIndexOf('/') + 1) : specifier;
  const lines = source.split('\n');
  const index = lines.findIndex((l) => new RegExp(`['"](?:[^'"]*/)?${wanted.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}['"]`).test(l));
  return index === -1 ? undefined : index + 1;
}

const kMaxChecked = 64;

/** Finds the file and line of a syntax error in `file` or the relative modules it imports statically. */
function syntaxErrorLocation(file: string, seen: Set<string>): Location | undefined {
  if (seen.has(file) || seen.size >= kMaxChecked || !existsSync(file)) return undefined;
  seen.add(file);
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  // `node --check` parses TypeScript as JavaScript: only JavaScript files are checked.
  if (!kTypeScriptFile.test(file)) {
    const result = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10_000 });
    if (result.status !== 0 && typeof result.stderr === 'string') {
      const found = /^(.+?):(\d+)\n([^\n]*)\n([ \t]*\^+)/.exec(result.stderr);
      if (found !== null) return { location: `${found[1]}:${found[2]}`, snippet: [found[3]!, found[4]!] };
    }
  }
  for (const match of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const found = syntaxErrorLocation(resolvePath(dirname(file), match[1]!), seen);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** What to do when Node cannot load a TypeScript module, or undefined when that is not the failure. */
function typescriptHint(error: Error, location: string | undefined): string | undefined {
  const code = (error as { code?: unknown }).code;
  const node = process.versions.node;
  const [major = 0, minor = 0] = node.split('.').map(Number);
  if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?tsx?"? for /i.test(error.message)) {
    const flag = (major === 22 && minor >= 6) || (major === 23 && minor < 6) ? ', or pass --experimental-strip-types' : '';
    return `Node ${node} cannot load TypeScript: build it to JavaScript, or run with \`node --import tsx\`${flag}, or use Node >= 22.18 (or >= 23.6), which strips types by default.`;
  }
  if (code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX') {
    return 'Node strips erasable TypeScript only (no enum, namespace, parameter properties or import =): rewrite that, build it to JavaScript, or run with `node --import tsx`.';
  }
  if (code === 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING') {
    return 'Node does not strip types from files under node_modules: ship that package as JavaScript.';
  }
  if (code === 'ERR_MODULE_NOT_FOUND' && location !== undefined && kTypeScriptFile.test(location.replace(/:\d+(?::\d+)?$/, ''))) {
    const missing = /^Cannot find module '([^']+)\.js'/.exec(error.message);
    if (missing !== null && existsSync(`${missing[1]}.ts`)) {
      return `Node's type stripping does not map .js imports to .ts files: import it as '${missing[1]!.slice(missing[1]!.lastIndexOf('/') + 1)}.ts' (tsconfig: allowImportingTsExtensions, or rewriteRelativeImportExtensions), or run with \`node --import tsx\`.`;
    }
  }
  return undefined;
}
