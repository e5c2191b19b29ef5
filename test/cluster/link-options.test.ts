// Cluster options and `sluice serve` flags: validated, with defaults.
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/server/options.js';
import { serveOptions } from '../../src/cli/serve.js';
import { UsageError } from '../../src/cli/flags.js';
import { redactUrl } from '../../src/cluster/link.js';

describe('cluster options', () => {
  it('defaults the prefix, startDegraded and a random node id; refuses bad values with invalid_option', () => {
    const resolved = resolveOptions({ tools: [], cluster: { redis: 'redis://127.0.0.1:6379' } }).cluster!;
    expect(resolved).toMatchObject({ redis: 'redis://127.0.0.1:6379', keyPrefix: 'sluice:', startDegraded: false });
    expect(resolved.nodeId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(resolveOptions({ tools: [] }).cluster).toBeUndefined();
    for (const cluster of [null, 'redis://x', { redis: 'http://x' }, { redis: 'redis://x', nodeId: 'a.b' }, { redis: 'redis://x', keyPrefix: 'has space' }, { redis: 'redis://x', startDegraded: 'yes' }]) {
      expect(() => resolveOptions({ tools: [], cluster: cluster as never })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    }
  });

  it('sluice serve --redis, --redis-prefix, --start-degraded and SLUICE_REQUEST_STATE_KEYS', () => {
    const key = Buffer.alloc(32, 1).toString('base64url');
    const options = serveOptions({ redis: 'redis://r:6379', 'redis-prefix': 'p:', 'start-degraded': true }, { SLUICE_REQUEST_STATE_KEYS: `${key}, ${key}` });
    expect(options.cluster).toEqual({ redis: 'redis://r:6379', keyPrefix: 'p:', startDegraded: true });
    expect(options.requestStateKeys).toEqual([key, key]);
    expect(serveOptions({}, {}).cluster).toBeUndefined();
    expect(() => serveOptions({ 'start-degraded': true }, {})).toThrow(UsageError);
    expect(() => serveOptions({ redis: 'localhost:6379' }, {})).toThrow(UsageError);
  });

  it('logs never show a Redis password', () => {
    expect(redactUrl('redis://user:secret@h:1/0')).toBe('redis://user:***@h:1/0');
    expect(redactUrl('rediss://secret@h:1')).toBe('rediss://***@h:1');
  });
});
