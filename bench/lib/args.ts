/** The benchmark scripts' command line: `--name value` options. No side effects on import. */

/** The value after `--name` in this process's arguments, else `fallback`. */
export function option(name: string, fallback: string): string {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1]! : fallback;
}
