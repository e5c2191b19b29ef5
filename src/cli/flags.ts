/** Command-line flag parsing shared by the sluice commands: usage errors exit 2. */

/** A mistake in the command line: exit code 2, with the usage. */
export class UsageError extends Error {}

export function integerFlag(name: string, text: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (text === undefined) return undefined;
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `a whole number of at least ${min}` : `a whole number from ${min} to ${max}`;
    throw new UsageError(`--${name} must be ${range}, got ${JSON.stringify(text)}`);
  }
  return n;
}

export function choiceFlag<T extends string>(name: string, text: string | undefined, choices: readonly T[]): T | undefined {
  if (text === undefined) return undefined;
  if (!(choices as readonly string[]).includes(text)) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(text)}`);
  return text as T;
}
