import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadUwsWithSource } from '../../src/transport/http/uws/load.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { modernMeta } from '../helpers/server.js';

/**
 * `.ci/current-distro` runs the adapter suites inside a Debian 13 root under Node 22 and 24 and sets
 * SLUICE_EXPECT_UWS=1: there, uWS must serve, from the npm build for that ABI. Were the loader to
 * fall back to node:http (a binary that no longer loads, a package dropped from the install), every
 * uWS case in that stage would be skipped and the stage would pass on node:http: this test is what
 * fails instead.
 */
const kExpectUws = process.env.SLUICE_EXPECT_UWS === '1';
const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const kAbi = process.versions.modules;
const cleanup = cleanupAfterEach();

describe('uWS on a current distribution (SLUICE_EXPECT_UWS=1)', () => {
  it.runIf(kExpectUws)(`the loader picks a native uWS build for Node ${process.versions.node} (ABI ${kAbi})${kExpectUws ? '' : ' — SKIPPED: only inside .ci/current-distro'}`, () => {
    const { source } = loadUwsWithSource();
    expect(source.file.endsWith(`uws_${process.platform}_${process.arch}_${kAbi}.node`)).toBe(true);
    if (Number(process.versions.node.split('.')[0]) >= 22) expect(source.packageName).toBe('@btc-vision/uwebsockets.js');
  });

  it.runIf(kExpectUws)(`sluice serve --workers 2 says it serves on uWS, names the package, version and ABI, and answers${kExpectUws ? '' : ' — SKIPPED: only inside .ci/current-distro'}`, async () => {
    const child = spawn(process.execPath, [kBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--workers', '2'], { stdio: ['ignore', 'ignore', 'pipe'] });
    cleanup(() => new Promise<void>((resolve) => { if (child.exitCode !== null) resolve(); else { child.once('exit', () => resolve()); child.kill('SIGTERM'); } }));
    const line = await new Promise<string>((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error(`no start-up line in 20 s: ${text}`)), 20_000);
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
        const found = /sluice: serving MCP at .*\n/.exec(text);
        if (found !== null) { clearTimeout(timer); resolve(found[0]); }
      });
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`sluice serve exited (${code}): ${text}`)); });
    });
    const { version } = loadUwsWithSource().source;
    expect(line).toContain(`uWebSockets.js from @btc-vision/uwebsockets.js v${version} (native uws_${process.platform}_${process.arch}_${kAbi}.node), 2 HTTP threads`);
    const url = /serving MCP at (\S+)/.exec(line)?.[1] ?? '';
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'on uWS' }, _meta: modernMeta() } }),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('on uWS');
  });
});
