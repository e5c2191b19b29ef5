/**
 * The README's quickstart, exactly as printed: its "Your first MCP server" section is extracted from
 * README.md (not copied) and run by the README runner (test/helpers/readme.ts) in a fresh folder,
 * next to a `sluice` folder holding the package built by `npm pack`, as the README tells a reader
 * to lay them out. It installs that tarball and TypeScript from the registry, builds, starts the
 * server, calls a tool and cancels a call by timeout.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from './helpers/cleanup.js';
import { runReadme } from './helpers/readme.js';
import type { BackgroundCommand } from './helpers/readme.js';
import { scratchDir } from './helpers/scratch.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const onCleanup = cleanupAfterEach();

/** The README section a newcomer follows, from its heading to the next `## ` heading. */
function quickstartSection(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('## Your first MCP server');
  if (start === -1) throw new Error('README.md has no "Your first MCP server" section');
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** True when something already listens on 127.0.0.1:port (the quickstart's port is fixed). */
function portTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

describe('the README quickstart', () => {
  it('runs as written: install from npm pack, build, serve, call, cancel', async () => {
    const section = quickstartSection();
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    // The section's own words say where the tarball is: keep the test honest about that.
    expect(section).toContain(`sluice/sluice-${version}.tgz`);
    expect(await portTaken(3000), 'port 3000 (the quickstart\'s) is already in use on this machine').toBe(false);
    const work = scratchDir('sluice-quickstart-');
    mkdirSync(join(work, 'sluice'));
    execFileSync('npm', ['pack', '--pack-destination', join(work, 'sluice')], { cwd: root, stdio: 'pipe' });
    expect(existsSync(join(work, 'sluice', `sluice-${version}.tgz`))).toBe(true);
    const project = join(work, 'my-tools');
    mkdirSync(project);
    writeFileSync(join(project, 'README.md'), section);
    const servers: BackgroundCommand[] = [];
    onCleanup(() => { for (const s of servers) s.kill(); });
    await runReadme(join(project, 'README.md'), { commandTimeoutMs: 120_000, onServer: (s) => servers.push(s) });
    // The reader's project is what the README said to make.
    expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'))).toMatchObject({ type: 'module', dependencies: { sluice: expect.stringContaining(`sluice-${version}.tgz`) } });
    expect(existsSync(join(project, 'dist', 'tools.js'))).toBe(true);
  }, 300_000);
});
