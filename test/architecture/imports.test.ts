/**
 * The import graph of src/ and native-free-shm/, checked against a layer table: no import cycle
 * between folders, no import from a lower layer into a higher one, and the client and protocol
 * rules below. Every .ts file is parsed (TypeScript's parser: import/export-from declarations and
 * dynamic import()); type-only imports count too, since they couple the folders all the same.
 *
 * Violations found on the tree when this test was written, in files other developers own, are in
 * `knownViolations` with a comment each: the test stays green with them, fails on any new one, and
 * fails on an entry that no longer occurs (delete it: the list only shrinks).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// ---------------------------------------------------------------------------------------------
// The layer table, bottom first. A file belongs to the entry with the longest matching prefix, so a
// new subfolder (src/protocol/methods/, src/protocol/eras/, src/transport/http/common/) inherits its
// folder's layer. A folder or file directly under src/ that no entry matches fails the test: place it.

const kLayers: readonly (readonly string[])[] = [
  /* 0 */ ['native-free-shm/'],
  /* 1 */ ['src/errors.ts', 'src/validate.ts', 'src/otel-api.ts', 'src/ports/'], // ports/: what crosses a thread's MessagePort (value bounds; the call protocol of ids, deadlines, undeliverables by position that tasks/ and cluster/ both speak); it needs only errors.ts
  /* 2 */ ['src/registry/'],
  /* 3 */ ['src/telemetry/', 'src/sessions/', 'src/auth/'],
  /* 4 */ ['src/tools/', 'src/catalog/', 'src/cluster/'],
  /* 5 */ ['src/tasks/'], // the task state machine, and beside it the stores (memory, over a port, Redis: above cluster/)
  /* 6 */ ['src/protocol/'],
  /* 7 */ ['src/transport/'],
  /* 8 */ ['src/server/'], // the composition root: config resolved once, the stack of each role, the close list
  /* 9 */ ['src/process/'], // process and thread start-up: supervisor, HTTP worker and pool threads, stdio, entries
  /* 10 */ ['src/client/'], // only the CLI (and the public entry) may use the client; its own imports: kClientMayImport
  /* 11 */ ['src/loadgen/'], // sluice bench's load generator: speaks MCP as a client, knows nothing of the server
  /* 12 */ ['src/cli/'],
  /* 13 */ ['src/index.ts'], // the public API: nothing inside src/ imports it
];

/** The client talks to any MCP server: it imports the wire constants, the errors and the OpenTelemetry API's loader, nothing of the server. */
const kClientMayImport: readonly string[] = ['src/client/', 'src/protocol/wire.ts', 'src/errors.ts', 'src/otel-api.ts'];

/** The protocol never sees HTTP: none of these may be imported under src/protocol/. */
const kHttpLibrary = /^(node:)?(http|https|http2|net)$|uWebSockets|uws/i;

/**
 * Violations allowed to stay (none): a key here would be `upward: <from folder> -> <to folder>`,
 * `cycle: <folders or files, sorted, joined by ' <-> '>`, `client: <from folder> -> <file>`, or
 * `http-in-protocol: <file> -> <specifier>`. The list only shrinks; it is empty.
 */
const knownViolations: readonly string[] = [];

/**
 * Packages that cost tens of milliseconds of CPU to load in every thread that loads them (measured on
 * Node 20: jose ~65, Ajv with ajv-formats ~75, the OpenTelemetry API ~45, ioredis ~250, undici
 * ~210, hdr-histogram-js ~75, msgpackr ~40), loaded only where they are used: by `import()` or
 * `require` on the path that needs them (auth configured, the first tool schema, a registered SDK,
 * cluster mode, a JWKS fetch, sluice bench). No thread's or command's static import graph holds one.
 */
const kLoadedOnUse: readonly string[] = ['jose', 'ajv', 'ajv/dist/2020.js', 'ajv-formats', '@opentelemetry/api', 'ioredis', 'undici', 'hdr-histogram-js', 'msgpackr'];

/** Where a thread or command starts: the public entries, the CLI, the two worker entries. */
const kEntries: readonly string[] = ['src/index.ts', 'src/client/index.ts', 'src/cli/main.ts', 'src/process/entries/http-worker.ts', 'src/process/entries/pool-worker.ts'];

/** Size rules for src/: a file a reader can hold in mind, a function that fits on a screen or two. */
const kMaxFileLines = 450;
const kMaxFunctionLines = 80;

// ---------------------------------------------------------------------------------------------
// The graph

const kRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Edge {
  /** Repository-relative, '/'-separated. */
  from: string;
  /** The resolved file for a relative specifier; the specifier itself otherwise. */
  to: string;
  relative: boolean;
}

function posix(path: string): string {
  return path.split(sep).join('/');
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(kRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(kRoot, file), 'utf8'), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments.length > 0 && ts.isStringLiteralLike(node.arguments[0])) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text); // typeof import('...')
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Specifiers a file's code loads when the file is evaluated: static imports and re-exports, not `import type`, not `import()`. */
function valueSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(kRoot, file), 'utf8'), ts.ScriptTarget.Latest, false);
  return source.statements.flatMap((node) => {
    // verbatimModuleSyntax (tsconfig.json): every import but `import type` stays in the output.
    if (ts.isImportDeclaration(node) && node.importClause?.isTypeOnly !== true && ts.isStringLiteral(node.moduleSpecifier)) return [node.moduleSpecifier.text];
    if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) return [node.moduleSpecifier.text];
    return [];
  });
}

/** Everything evaluating `entry` loads: its static value imports, followed through src/, as `file -> specifier` chains. */
function staticGraph(entry: string): Map<string, string> {
  const via = new Map<string, string>([[entry, entry]]);
  const queue = [entry];
  while (queue.length > 0) {
    const from = queue.shift()!;
    for (const spec of valueSpecifiers(from)) {
      const to = spec.startsWith('.') ? resolved(from, spec) : spec;
      if (via.has(to)) continue;
      via.set(to, `${via.get(from)} -> ${to}`);
      if (spec.startsWith('.')) queue.push(to);
    }
  }
  return via;
}

/** A relative specifier of `from` as a repository path, `.js` read as the `.ts` it is built from. */
function resolved(from: string, spec: string): string {
  const to = posix(relative(kRoot, resolve(kRoot, dirname(from), spec)));
  return to.endsWith('.js') ? `${to.slice(0, -3)}.ts` : to;
}

function edgesOf(files: readonly string[]): Edge[] {
  return files.flatMap((from) => specifiers(from).map((spec): Edge => {
    if (!spec.startsWith('.')) return { from, to: spec, relative: false };
    let to = resolved(from, spec);
    if (!to.endsWith('.ts') && files.includes(`${to}/index.ts`)) to = `${to}/index.ts`;
    return { from, to, relative: true };
  }));
}

/** The layer of a repository path, or -1 when the table does not place it. */
function layerOf(path: string): number {
  let best = -1;
  let length = -1;
  kLayers.forEach((prefixes, layer) => {
    for (const prefix of prefixes) {
      if ((path === prefix || path.startsWith(prefix)) && prefix.length > length) {
        best = layer;
        length = prefix.length;
      }
    }
  });
  return best;
}

/**
 * A file's folder for the cycle rule: its top folder under src/ (a concern's subfolders, such as
 * protocol/eras and protocol/methods, are one unit: they may use each other); each file directly in
 * src/ stands alone.
 */
function folderOf(path: string): string {
  const dir = posix(dirname(path));
  if (dir === 'src') return path;
  const parts = dir.split('/');
  return parts[0] === 'src' && parts.length > 2 ? `${parts[0]}/${parts[1]}` : dir;
}

/** The folder named in an `upward:` key: the top folder of the layer entry (src/protocol, not src/protocol/eras). */
function unitOf(path: string): string {
  const parts = path.split('/');
  if (parts[0] === 'native-free-shm') return 'native-free-shm';
  return parts.length === 2 ? path : `${parts[0]}/${parts[1]}`;
}

/** Strongly connected components (Tarjan) of a graph given as adjacency sets. */
function components(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const connect = (v: string): void => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, indices.get(w)!));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      out.push(component);
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) connect(v);
  return out;
}

interface Findings {
  unplaced: string[];
  violations: Map<string, string[]>;
}

function check(files: readonly string[]): Findings {
  const unplaced = [...new Set(files.filter((f) => layerOf(f) < 0).map(unitOf))];
  const violations = new Map<string, string[]>();
  const add = (key: string, where: string): void => {
    violations.set(key, [...(violations.get(key) ?? []), where]);
  };
  const folderGraph = new Map<string, Set<string>>();
  for (const edge of edgesOf(files)) {
    const where = `${edge.from} imports ${edge.to}`;
    if (!edge.relative) {
      if (edge.from.startsWith('src/protocol/') && kHttpLibrary.test(edge.to)) add(`http-in-protocol: ${edge.from} -> ${edge.to}`, where);
      continue;
    }
    if (!edge.to.startsWith('src/') && !edge.to.startsWith('native-free-shm/')) continue;
    if (edge.from.startsWith('src/client/') && !kClientMayImport.some((p) => edge.to === p || edge.to.startsWith(p))) {
      add(`client: ${folderOf(edge.from)} -> ${edge.to}`, where);
    }
    const upward = layerOf(edge.to) > layerOf(edge.from);
    if (upward) add(`upward: ${unitOf(edge.from)} -> ${unitOf(edge.to)}`, where);
    // Cycles among the remaining (same-layer or downward) edges: a cycle through an upward edge is
    // reported once, as that upward edge.
    const a = folderOf(edge.from);
    const b = folderOf(edge.to);
    if (!upward && a !== b) {
      if (!folderGraph.has(a)) folderGraph.set(a, new Set());
      folderGraph.get(a)!.add(b);
    }
  }
  for (const component of components(folderGraph)) {
    if (component.length > 1) add(`cycle: ${component.sort().join(' <-> ')}`, component.join(', '));
  }
  // Circles between files, inside a folder too (type-only imports included): one file of each
  // pair should own what both need.
  const fileGraph = new Map<string, Set<string>>();
  for (const edge of edgesOf(files)) {
    if (!edge.relative || !files.includes(edge.to)) continue;
    if (!fileGraph.has(edge.from)) fileGraph.set(edge.from, new Set());
    fileGraph.get(edge.from)!.add(edge.to);
  }
  for (const component of components(fileGraph)) {
    if (component.length > 1) add(`cycle: ${component.sort().join(' <-> ')}`, component.join(', '));
  }
  return { unplaced, violations };
}

/** Files of src/ longer than kMaxFileLines, as `path: lines`. */
function longFiles(files: readonly string[]): string[] {
  return files.flatMap((file) => {
    const lines = readFileSync(join(kRoot, file), 'utf8').split('\n').length;
    return lines > kMaxFileLines ? [`${file}: ${lines}`] : [];
  });
}

/** Functions (declarations, methods, arrows, constructors, accessors) whose body is longer than kMaxFunctionLines. */
function longFunctions(file: string, text: string = readFileSync(join(kRoot, file), 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const body = node.body as ts.Node;
      const first = source.getLineAndCharacterOfPosition(body.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(body.getEnd()).line;
      if (last - first + 1 > kMaxFunctionLines) {
        const name = node.name !== undefined ? node.name.getText(source) : ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(source) : '(anonymous)';
        found.push(`${file}:${first + 1} ${name}: ${last - first + 1} lines`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

// ---------------------------------------------------------------------------------------------

describe('import graph', () => {
  const files = [...sourceFiles('src'), ...sourceFiles('native-free-shm')];
  const findings = check(files);

  it('reads the tree (a parser that finds nothing would pass everything)', () => {
    expect(files.length).toBeGreaterThan(30);
    const edges = edgesOf(files);
    expect(edges.filter((e) => e.relative).length).toBeGreaterThan(100);
    expect(edges).toContainEqual({ from: 'src/registry/registry.ts', to: 'native-free-shm/index.ts', relative: true });
  });

  it('places every folder of src/ in the layer table', () => {
    expect(findings.unplaced, 'add these to kLayers').toEqual([]);
  });

  it('has no violations but the known ones', () => {
    const found = [...findings.violations.keys()].sort();
    const unknown = found.filter((key) => !knownViolations.includes(key));
    expect(unknown.map((key) => `${key}\n    ${findings.violations.get(key)!.join('\n    ')}`), 'new violations').toEqual([]);
  });

  it('lists no known violation that is gone (delete it from knownViolations)', () => {
    expect(knownViolations.filter((key) => !findings.violations.has(key))).toEqual([]);
  });

  it(`has no src file over ${kMaxFileLines} lines`, () => {
    expect(longFiles(sourceFiles('src'))).toEqual([]);
  });

  it(`has no function in src over ${kMaxFunctionLines} lines`, () => {
    expect(sourceFiles('src').flatMap((file) => longFunctions(file))).toEqual([]);
  });

  it('loads no costly package on any start-up path (each is loaded where it is used)', () => {
    const found = kEntries.flatMap((entry) => {
      const graph = staticGraph(entry);
      return kLoadedOnUse.filter((pkg) => graph.has(pkg)).map((pkg) => graph.get(pkg)!);
    });
    expect(found).toEqual([]);
    // A tools module imports 'sluice' in every HTTP worker and pool thread: the public entry leaves
    // the engine and the transports (what an in-process or stdio server serves with) to import().
    expect(staticGraph('src/index.ts').get('src/protocol/engine.ts')).toBeUndefined();
    // The walk itself: it follows src/ (the worker entry reaches the engine) and sees packages.
    const worker = staticGraph('src/process/entries/http-worker.ts');
    expect(worker.has('src/protocol/engine.ts')).toBe(true);
    expect(worker.has('piscina')).toBe(true);
    expect(staticGraph('src/auth/gate.ts').get('jose')).toBe('src/auth/gate.ts -> src/auth/jwks.ts -> jose');
  });

  it('catches what it is meant to catch (the checks on a made-up graph)', () => {
    const long = `const f = () => {\n${'  x();\n'.repeat(kMaxFunctionLines)}};\nfunction g() {\n  return 1;\n}\n`;
    expect(longFunctions('made-up.ts', long)).toEqual([`made-up.ts:1 f: ${kMaxFunctionLines + 2} lines`]);
    expect(layerOf('src/protocol/methods/tools.ts')).toBe(layerOf('src/protocol/engine.ts'));
    expect(layerOf('src/transport/http/common/origin.ts')).toBe(layerOf('src/transport/http/endpoint.ts'));
    expect(layerOf('src/process/entries/x.ts')).toBe(layerOf('src/process/supervisor.ts'));
    expect(layerOf('src/server/x.ts')).toBeLessThan(layerOf('src/process/x.ts'));
    expect(layerOf('src/registry/x.ts')).toBeLessThan(layerOf('src/telemetry/x.ts'));
    expect(layerOf('native-free-shm/table.ts')).toBe(0);
    expect(layerOf('src/newfolder/x.ts')).toBe(-1);
    const graph = new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a'])], ['d', new Set(['a'])]]);
    expect(components(graph).filter((c) => c.length > 1).map((c) => c.sort())).toEqual([['a', 'b', 'c']]);
    expect(kHttpLibrary.test('node:http')).toBe(true);
    expect(kHttpLibrary.test('@trufflesuite/uws-js-unofficial')).toBe(true);
    expect(kHttpLibrary.test('uWebSockets.js')).toBe(true);
    expect(kHttpLibrary.test('node:crypto')).toBe(false);
  });
});
