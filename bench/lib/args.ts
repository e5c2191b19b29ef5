/**
 * The benchmark scripts' command line. Each script declares every option it takes, once; an option
 * it does not take, a value that is not one, or a stray word ends the script with exit code 2
 * before anything runs (a mistyped `--rep 5` once ran a 20-minute bench with the defaults), and
 * `--help` prints the script's usage and its options, then exits 0. No side effects on import.
 */
import { parseArgs } from 'node:util';

/**
 * One option: `--name value` (string, or a positive number) or a bare `--name` (flag). A string's
 * `check` returns what is wrong with a value given on the command line, or undefined.
 */
export type OptionSpec =
  | { type: 'string'; default?: string; choices?: readonly string[]; check?: (value: string) => string | undefined; help: string }
  | { type: 'number'; default?: number; integer?: boolean; help: string }
  | { type: 'flag'; help: string };

/** What a spec parses to: a flag is a boolean, an option with a default is always present. */
export type ParsedOptions<S extends Record<string, OptionSpec>> = {
  [K in keyof S]: S[K] extends { type: 'flag' } ? boolean
    : S[K] extends { type: 'number'; default: number } ? number
      : S[K] extends { type: 'number' } ? number | undefined
        : S[K] extends { type: 'string'; default: string } ? string
          : string | undefined;
};

/** Thrown for a bad command line; `benchArgs` turns it into a message and exit code 2. */
class UsageError extends Error {}

/**
 * Parses this process's arguments against `spec`. `usage` is the script's command line and what it
 * does (its header comment's run lines, say); `--help` prints it with the options.
 */
export function benchArgs<S extends Record<string, OptionSpec>>(usage: string, spec: S): ParsedOptions<S> {
  const help = (): string => `${usage.trim()}\n\nOptions:\n${Object.entries(spec).map(([name, o]) => describe(name, o)).join('\n')}\n  --help              this text\n`;
  try {
    return parse(spec, process.argv.slice(2), help);
  } catch (error) {
    if (!(error instanceof UsageError) && !isNodeArgError(error)) throw error;
    process.stderr.write(`${(error as Error).message}\nRun with --help for the options.\n`);
    process.exit(2);
  }
}

function parse<S extends Record<string, OptionSpec>>(spec: S, argv: readonly string[], help: () => string): ParsedOptions<S> {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const [name, o] of Object.entries(spec)) options[name] = { type: o.type === 'flag' ? 'boolean' : 'string' };
  const { values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false });
  if (values.help === true) {
    process.stdout.write(help());
    process.exit(0);
  }
  const parsed: Record<string, string | number | boolean | undefined> = {};
  for (const [name, o] of Object.entries(spec)) {
    const raw = values[name];
    if (o.type === 'flag') parsed[name] = raw === true;
    else if (raw === undefined) parsed[name] = o.default;
    else if (o.type === 'string') parsed[name] = checkedString(name, raw as string, o);
    else parsed[name] = checkedNumber(name, raw as string, o.integer === true);
  }
  return parsed as ParsedOptions<S>;
}

function checkedString(name: string, value: string, o: Extract<OptionSpec, { type: 'string' }>): string {
  if (o.choices !== undefined && !o.choices.includes(value)) throw new UsageError(`--${name} must be one of ${o.choices.join(', ')}, not '${value}'`);
  const problem = o.check?.(value);
  if (problem !== undefined) throw new UsageError(`--${name} ${problem}, not '${value}'`);
  return value;
}

function checkedNumber(name: string, value: string, integer: boolean): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(`--${name} needs a positive ${integer ? 'integer' : 'number'}, not '${value}'`);
  }
  return n;
}

function describe(name: string, o: OptionSpec): string {
  const head = o.type === 'flag' ? `--${name}` : `--${name} <${o.type === 'number' ? 'n' : 'value'}>`;
  const choices = o.type === 'string' && o.choices !== undefined ? ` (${o.choices.join(' | ')})` : '';
  const fallback = o.type !== 'flag' && o.default !== undefined && o.default !== '' ? ` [default: ${o.default}]` : '';
  return `  ${head.padEnd(19)} ${o.help}${choices}${fallback}`;
}

/** node:util's parseArgs reports an unknown option or a missing value with these codes. */
function isNodeArgError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}
