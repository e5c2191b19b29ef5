/**
 * The option checks, written once: every option of every layer (server options, registry
 * bounds, task limits, cluster, auth) is checked with these, each failure a `SluiceError`
 * `invalid_option` whose message names the option and what it expects. Imports nothing above
 * errors.ts, so every layer can use them.
 */
import { SluiceError } from './errors.js';

/** `value` when it is an integer in [min, max]; `fallback` when undefined; else `invalid_option`. */
export function integer(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new SluiceError('invalid_option', `${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
  }
  return value;
}

/** `integer`, with `Infinity` accepted too (an unbounded quota). */
export function integerOrInfinity(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === Infinity) return Infinity;
  try {
    return integer(name, value, fallback, min, max);
  } catch {
    throw new SluiceError('invalid_option', `${name} must be an integer from ${min} to ${max} or Infinity, got ${String(value)}`);
  }
}

/** `value` when it is a boolean; `fallback` when undefined; else `invalid_option`. */
export function boolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new SluiceError('invalid_option', `${name} must be a boolean, got ${String(value)}`);
  return value;
}

/** `value` when it is one of `allowed`; `fallback` when undefined; else `invalid_option` listing them. */
export function oneOf<T extends string>(name: string, value: unknown, fallback: T, allowed: readonly T[]): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly unknown[]).includes(value)) {
    throw new SluiceError('invalid_option', `${name} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${String(value)}`);
  }
  return value as T;
}

