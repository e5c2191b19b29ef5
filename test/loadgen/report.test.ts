/**
 * `--report out.html`: a self-contained page (no script, no external URL) that headless Chromium
 * (the Debian package `chromium`) renders with the summary table, the latency-distribution and
 * rate-over-time charts, and the compare table when comparing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { benchJson, startFixture, tallyPath } from './helpers.js';
import { scratchDir } from '../helpers/scratch.js';

function chromiumPath(): string | undefined {
  for (const name of ['chromium', 'chromium-browser']) {
    try { return execFileSync('which', [name], { encoding: 'utf8' }).trim(); } catch { /* next */ }
  }
  return undefined;
}

const kChromium = chromiumPath();

/** Headless Chromium on a file: the DOM after load, and a screenshot's size. */
function render(file: string): { dom: string; screenshotBytes: number } {
  const dir = scratchDir('sluice-chromium-');
  const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', `--user-data-dir=${join(dir, 'profile')}`];
  const dom = spawnSync(kChromium!, [...flags, '--dump-dom', pathToFileURL(file).href], { encoding: 'utf8', timeout: 60_000 });
  if (dom.status !== 0) throw new Error(`chromium --dump-dom failed (${dom.status}): ${dom.stderr}`);
  const png = join(dir, 'page.png');
  const shot = spawnSync(kChromium!, [...flags, `--screenshot=${png}`, '--window-size=900,1400', pathToFileURL(file).href], { encoding: 'utf8', timeout: 60_000 });
  if (shot.status !== 0 || !existsSync(png)) throw new Error(`chromium --screenshot failed (${shot.status}): ${shot.stderr}`);
  return { dom: dom.stdout, screenshotBytes: statSync(png).size };
}

const name = (what: string): string => (kChromium === undefined ? `${what} (skipped: the Debian package chromium is not installed)` : what);

describe('--report out.html', () => {
  it.skipIf(kChromium === undefined)(name('one run: self-contained, and Chromium renders its table and both charts'), async () => {
    const server = await startFixture('bench-peers.mjs', ['v1-stateless', tallyPath()]);
    const out = join(scratchDir('sluice-report-'), 'out.html');
    try {
      const run = await benchJson([server.url, '--tool', 'tally', '--args', '{"text":"x"}', '--duration', '2s', '--warmup', '0s', '--connections', '2', '--report', out]);
      expect(run.code, run.stderr).toBe(0);
      const html = readFileSync(out, 'utf8');
      expect(html).not.toMatch(/<script|<link|<img|(src|href)=|url\(/i); // nothing fetched from anywhere
      const { dom, screenshotBytes } = render(out);
      expect(dom).toContain('<h1>sluice bench</h1>');
      expect(dom).toMatch(/<table class="summary">.*requests<\/th><td>\d+ \(/s);
      expect(dom).toMatch(/aria-label="latency distribution"/);
      expect(dom).toMatch(/aria-label="rate over time"/);
      const latency = /class="latency-line"[^>]*points="([^"]+)"/.exec(dom);
      expect(latency).not.toBeNull();
      expect(latency![1]!.trim().split(/\s+/).length).toBeGreaterThanOrEqual(10); // one point per percentile
      const rate = /class="rate-line"[^>]*points="([^"]+)"/.exec(dom);
      expect(rate![1]!.trim().split(/\s+/)).toHaveLength(run.json!.timeline.length);
      expect(screenshotBytes).toBeGreaterThan(10_000); // a page with charts, not a blank one
    } finally {
      await server.stop();
    }
  });

  it.skipIf(kChromium === undefined)(name('--compare: the page has the ratio table and both runs charted'), async () => {
    const a = await startFixture('bench-peers.mjs', ['v1-stateless', tallyPath()]);
    const b = await startFixture('bench-peers.mjs', ['v2', tallyPath()]);
    const out = join(scratchDir('sluice-report-'), 'compare.html');
    try {
      const run = await benchJson([a.url, '--compare', b.url, '--repeats', '2', '--tool', 'tally', '--args', '{"text":"x"}', '--duration', '0.5s', '--warmup', '0s', '--connections', '2', '--report', out]);
      expect(run.code, run.stderr).toBe(0);
      const { dom } = render(out);
      expect(dom).toMatch(/Comparison over 2 interleaved rounds/);
      expect(dom).toMatch(/<th>requestsPerSecond<\/th><td>[\d.]+ \([\d.]+–[\d.]+\)<\/td><td>[\d.]+ \([\d.]+–[\d.]+\)<\/td><td class="ratio">[\d.]+ \([\d.]+–[\d.]+\)/);
      expect(dom.match(/class="latency-line"/g)).toHaveLength(2);
      expect(dom.match(/class="rate-line"/g)).toHaveLength(2);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
