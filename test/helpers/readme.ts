/**
 * Runs an example's README as a reader would. The README's fenced code blocks say what to do,
 * by their info string (the words after the opening fence):
 *
 * - ```` ```ts file=src/tools.ts ```` (any language, `file=<path relative to the README>`): a file.
 *   The file on disk must equal the block, so the README and the code cannot drift. With the extra
 *   word `create` (```` ```ts file=src/extra.ts create ````) the README tells the reader to create
 *   the file: the runner writes it there instead of checking it.
 * - ```` ```sh run ````: commands the reader runs in order, one per line (blank lines and lines
 *   starting with `#` are comments; a line ending in `\` continues on the next). Each runs with
 *   `sh -c` in the README's folder; a non-zero exit fails.
 * - ```` ```sh serve ````: one long-running command (the server). It is started in the background
 *   (its own process group, as a terminal would) and the runner waits for its "serving" line on
 *   stderr (`sluice: serving MCP at <url> ...`). At the end the server process itself gets SIGTERM
 *   (the deepest process under the shell, so `npx sluice serve` works too: npx and sh exit with
 *   its status) and the command must exit 0.
 * - ```` ```sh call ````: commands run while the server runs (or on their own, without a serve
 *   block). A comment line `# expect: ...` says how the next command must end; without one it must
 *   exit 0. The grammar, clauses separated by commas:
 *
 *       expectation := "# expect:" clause ("," clause)*
 *       clause      := "exit" <integer>                 the exit code
 *                    | "output contains" <JSON string>  a substring of stdout and stderr together
 *
 *   e.g. `# expect: exit 0, output contains "Hello, Ada!"`.
 *
 * Blocks with any other info string (```` ```json ````, ```` ```ts ```` without `file=`) are prose.
 * Blocks run in document order; a serve block stays up until the end (or the next serve block).
 */
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';

export type BlockKind = 'file' | 'run' | 'serve' | 'call' | 'prose';

export interface Block {
  kind: BlockKind;
  /** The first word of the info string (may be empty). */
  lang: string;
  /** `key=value` words of the info string. */
  attrs: Record<string, string>;
  /** The other words of the info string after the language. */
  flags: string[];
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

export interface Expectation {
  exit: number;
  contains: string[];
}

export interface Command {
  command: string;
  expect: Expectation;
  line: number;
}

/** The fenced code blocks of a Markdown text (backtick or tilde fences, CommonMark-style). */
export function parseBlocks(markdown: string): Block[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(lines[i]);
    if (open === null) continue;
    const fence = open[1];
    const words = open[2].trim().split(/\s+/).filter((w) => w !== '');
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[j]);
      if (close !== null && close[1][0] === fence[0] && close[1].length >= fence.length) break;
      body.push(lines[j]);
    }
    const [lang = '', ...rest] = words;
    const attrs: Record<string, string> = {};
    const flags: string[] = [];
    for (const word of rest) {
      const eq = word.indexOf('=');
      if (eq > 0) attrs[word.slice(0, eq)] = word.slice(eq + 1);
      else flags.push(word);
    }
    const kind: BlockKind = attrs.file !== undefined ? 'file'
      : flags.includes('run') ? 'run'
        : flags.includes('serve') ? 'serve'
          : flags.includes('call') ? 'call'
            : 'prose';
    blocks.push({ kind, lang, attrs, flags, body: body.length > 0 ? `${body.join('\n')}\n` : '', line: i + 1 });
    i = j;
  }
  return blocks;
}

/** Parses the text after `# expect:` (see the grammar above). */
export function parseExpectation(text: string): Expectation {
  const expectation: Expectation = { exit: 0, contains: [] };
  const clause = /\s*(?:exit\s+(-?\d+)|output\s+contains\s+("(?:[^"\\]|\\.)*"))\s*(,|$)/y;
  let at = 0;
  const source = text.trim();
  if (source === '') throw new Error('empty expectation');
  while (at < source.length) {
    clause.lastIndex = at;
    const m = clause.exec(source);
    if (m === null) throw new Error(`cannot parse expectation at ${JSON.stringify(source.slice(at))} (grammar: exit <n> | output contains "<text>", comma-separated)`);
    if (m[1] !== undefined) expectation.exit = Number(m[1]);
    else expectation.contains.push(JSON.parse(m[2]) as string);
    at = clause.lastIndex;
    if (m[3] === '' && at < source.length) throw new Error(`cannot parse expectation ${JSON.stringify(source)}`);
  }
  return expectation;
}

/** The commands of a run/serve/call block, each with its expectation (default: exit 0). */
export function parseCommands(block: Block): Command[] {
  const commands: Command[] = [];
  const lines = block.body.split('\n');
  let pending: Expectation | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s*expect:(.*)$/.exec(line);
      if (m !== null) pending = parseExpectation(m[1]);
      continue;
    }
    let command = line;
    const first = i;
    while (command.endsWith('\\') && i + 1 < lines.length) command = `${command.slice(0, -1)}${lines[++i].trim()}`;
    commands.push({ command, expect: pending ?? { exit: 0, contains: [] }, line: block.line + 1 + first });
    pending = undefined;
  }
  if (pending !== undefined) throw new Error(`README line ${block.line}: an "# expect:" comment with no command after it`);
  return commands;
}

/**
 * What a reader's shell would have: none of the variables `npm run` and vitest set (but the npm
 * settings a machine may configure by environment: registry, cache, proxies, certificates), and
 * no node_modules/.bin on PATH.
 */
export function readerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  const kept = /^npm_config_(registry|cache|userconfig|globalconfig|(https?_)?proxy|noproxy|no_proxy|strict_ssl|cafile|ca)$/i;
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|INIT_CWD$|VITEST|NODE_ENV$|NODE_OPTIONS$|TEST$)/i.test(key) && !kept.test(key)) continue;
    env[key] = value;
  }
  const path = (env.PATH ?? '').split(delimiter).filter((p) => p !== '' && !p.includes('node_modules/.bin'));
  const nodeDir = dirname(process.execPath);
  if (!path.includes(nodeDir)) path.unshift(nodeDir);
  env.PATH = path.join(delimiter);
  return env;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs one command line with `sh -c` in `cwd`, killing its process group after `timeoutMs`. */
export function runLine(command: string, cwd: string, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('sh', ['-c', command], { cwd, env: readerEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => { stdout += c.toString(); });
    child.stderr!.on('data', (c: Buffer) => { stderr += c.toString(); });
    const timer = setTimeout(() => {
      killGroup(child, 'SIGKILL');
      reject(new Error(`\`${command}\` did not finish within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (error) => { clearTimeout(timer); reject(error); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolvePromise({ code, signal, stdout, stderr }); });
  });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** The deepest descendant of `pid` (following the first child at each level), or `pid` itself. */
function deepestDescendant(pid: number): number {
  let table: string;
  try {
    table = execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8' });
  } catch {
    return pid;
  }
  const children = new Map<number, number[]>();
  for (const row of table.trim().split('\n')) {
    const [child, parent] = row.trim().split(/\s+/).map(Number);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent)!.push(child);
  }
  let current = pid;
  for (;;) {
    const next = children.get(current);
    if (next === undefined || next.length === 0) return current;
    current = Math.min(...next);
  }
}

/** A server started from a serve block. */
export class BackgroundCommand {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly #exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly command: string, cwd: string) {
    this.child = spawn('sh', ['-c', command], { cwd, env: readerEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (c: Buffer) => { this.stdout += c.toString(); });
    this.child.stderr!.on('data', (c: Buffer) => { this.stderr += c.toString(); });
    this.#exited = new Promise((resolvePromise) => {
      this.child.on('close', (code, signal) => resolvePromise({ code, signal }));
    });
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits for the `serving` line on stderr. */
  async ready(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!/serving/.test(this.stderr)) {
      if (!this.running) throw new Error(`\`${this.command}\` exited before serving\nstderr:\n${this.stderr}`);
      if (Date.now() > deadline) throw new Error(`\`${this.command}\` did not print its serving line within ${timeoutMs} ms\nstderr:\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** SIGTERM to the server process itself; resolves with how the command (the shell) ended. */
  async stop(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running && this.child.pid !== undefined) {
      try {
        process.kill(deepestDescendant(this.child.pid), 'SIGTERM');
      } catch {
        // gone meanwhile
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), timeoutMs); });
    const result = await Promise.race([this.#exited, timedOut]);
    clearTimeout(timer);
    if (result === 'timeout') {
      this.kill();
      throw new Error(`\`${this.command}\` did not exit within ${timeoutMs} ms of SIGTERM\nstderr:\n${this.stderr}`);
    }
    return result;
  }

  /** SIGKILL to the whole process group (clean-up after a failure). */
  kill(): void {
    killGroup(this.child, 'SIGKILL');
  }
}

export interface ReadmeRunOptions {
  /** Per command (run and call lines). Default 60 s. */
  commandTimeoutMs?: number;
  /** For the serving line. Default 30 s. */
  serveTimeoutMs?: number;
  /** Progress lines (command, exit code, time). */
  log?: (line: string) => void;
  /** Called with each started server, so the caller can kill it if the run throws. */
  onServer?: (server: BackgroundCommand) => void;
}

/** Checks or writes the README's file blocks; returns the files that differ from their block. */
export function checkFiles(readmePath: string): string[] {
  const dir = dirname(readmePath);
  const problems: string[] = [];
  for (const block of parseBlocks(readFileSync(readmePath, 'utf8'))) {
    if (block.kind !== 'file') continue;
    const path = resolve(dir, block.attrs.file);
    if (block.flags.includes('create')) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, block.body);
    } else if (!existsSync(path)) {
      problems.push(`${block.attrs.file} (README line ${block.line}): no such file`);
    } else if (readFileSync(path, 'utf8') !== block.body) {
      problems.push(`${block.attrs.file} (README line ${block.line}): differs from the README's block`);
    }
  }
  return problems;
}

/** Does what the README at `readmePath` says, in its folder; throws at the first failure. */
export async function runReadme(readmePath: string, options: ReadmeRunOptions = {}): Promise<void> {
  const dir = dirname(readmePath);
  const commandTimeoutMs = options.commandTimeoutMs ?? 60_000;
  const log = options.log ?? (() => {});
  const drift = checkFiles(readmePath);
  if (drift.length > 0) throw new Error(`${readmePath}: README and code differ:\n  ${drift.join('\n  ')}`);
  const blocks = parseBlocks(readFileSync(readmePath, 'utf8'));
  if (!blocks.some((b) => b.kind === 'run' || b.kind === 'call')) throw new Error(`${readmePath}: no sh run or sh call block`);
  let server: BackgroundCommand | undefined;
  const stopServer = async () => {
    if (server === undefined) return;
    const current = server;
    server = undefined;
    const { code, signal } = await current.stop(15_000);
    log(`stopped \`${current.command}\`: exit ${code ?? signal}`);
    if (code !== 0) throw new Error(`\`${current.command}\` ended with ${code ?? signal} after SIGTERM, not exit 0\nstderr:\n${current.stderr}`);
  };
  try {
    for (const block of blocks) {
      if (block.kind === 'run' || block.kind === 'call') {
        for (const { command, expect, line } of parseCommands(block)) {
          const started = Date.now();
          const result = await runLine(command, dir, commandTimeoutMs);
          const output = result.stdout + result.stderr;
          log(`${block.kind} \`${command}\`: exit ${result.code ?? result.signal} in ${Date.now() - started} ms`);
          const detail = `README line ${line}: \`${command}\`\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}${server === undefined ? '' : `\nserver stderr:\n${server.stderr}`}`;
          if (block.kind === 'run' && result.code !== 0) throw new Error(`exited ${result.code ?? result.signal}, not 0: ${detail}`);
          if (block.kind === 'call') {
            if (result.code !== expect.exit) throw new Error(`exited ${result.code ?? result.signal}, expected ${expect.exit}: ${detail}`);
            for (const text of expect.contains) {
              if (!output.includes(text)) throw new Error(`output lacks ${JSON.stringify(text)}: ${detail}`);
            }
          }
        }
      } else if (block.kind === 'serve') {
        await stopServer();
        const commands = parseCommands(block);
        if (commands.length !== 1) throw new Error(`README line ${block.line}: a serve block holds exactly one command`);
        const started = Date.now();
        server = new BackgroundCommand(commands[0].command, dir);
        options.onServer?.(server);
        await server.ready(options.serveTimeoutMs ?? 30_000);
        log(`serve \`${commands[0].command}\`: serving after ${Date.now() - started} ms`);
      }
    }
    await stopServer();
  } finally {
    server?.kill();
  }
}

/** The example folders under `examplesDir`: its subfolders holding a README.md, sorted. */
export function exampleDirs(examplesDir: string): string[] {
  return readdirSync(examplesDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(examplesDir, e.name, 'README.md')))
    .map((e) => join(examplesDir, e.name))
    .sort();
}
