/**
 * Writing the benchmarks' reports: the results folder, JSON, Markdown tables, target rows
 * and the number formats they share. No side effects on import.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file runs as dist/bench/lib/report.js). */
export const kRoot = fileURLToPath(new URL('../../../', import.meta.url));
/** bench/results/ of the checkout: where every report is written. */
export const kResults = join(kRoot, 'bench', 'results');

/** Writes `[name, content]` pairs into bench/results/ and returns their paths as `bench/results/<name>`. */
export function writeResults(files: readonly (readonly [string, string])[]): string[] {
  mkdirSync(kResults, { recursive: true });
  for (const [name, content] of files) writeFileSync(join(kResults, name), content);
  return files.map(([name]) => `bench/results/${name}`);
}

/** Pretty JSON with a final newline (non-finite numbers become null, as JSON.stringify makes them). */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A performance target, reported as met or missed (never asserted). */
export interface Target {
  name: string;
  target: string;
  actual: string;
  met: boolean;
  /** Shown instead of met/missed: an info row beside the targets (not counted by targetSummary). */
  status?: string;
}

/** `x` with `d` decimals, or '–' when it is missing or not finite. */
export const fixed = (x: number | undefined, d: number): string => (x !== undefined && Number.isFinite(x) ? x.toFixed(d) : '–');

/** Millions per second, one decimal. */
export const mops = (x: number): string => `${(x / 1e6).toFixed(1)} M/s`;

/** One Markdown table row. */
export function mdRow(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** A Markdown table: header, alignment (one letter a column, `l` or `r`) and rows. */
export function mdTable(header: readonly string[], align: string, rows: readonly (readonly string[])[]): string[] {
  return [mdRow(header), `|${[...align].map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`, ...rows.map(mdRow)];
}

/** The targets as a Markdown table: target, wanted, measured, met?. */
export function targetTable(targets: readonly Target[]): string[] {
  return mdTable(['target', 'wanted', 'measured (median, min–max)', 'met?'], 'llll', targets.map((t) => [t.name, t.target, t.actual, t.status ?? (t.met ? 'met' : '**missed**')]));
}

/** `targets: 4/6 met (missed: a; b)`. */
export function targetSummary(all: readonly Target[]): string {
  const targets = all.filter((t) => t.status === undefined);
  const met = targets.filter((t) => t.met).length;
  return `targets: ${met}/${targets.length} met${met < targets.length ? ` (missed: ${targets.filter((t) => !t.met).map((t) => t.name).join('; ')})` : ''}`;
}
