/**
 * Whether node:http can share one port between threads here: `server.listen({ reusePort: true })`
 * (SO_REUSEPORT) came in Node 23.1 and was backported to 22.12; Node 20 never got it. Node refuses
 * the option on platforms without load-balancing SO_REUSEPORT (it throws there), so the platform
 * counts too. Detected by version (the option is silently ignored by an older Node's listen, so it
 * cannot be probed by trying).
 */
export type ReusePortSupport = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Platforms on which Node accepts `reusePort` (Node's docs: Linux, FreeBSD, Solaris, AIX). */
const kPlatforms: ReadonlySet<string> = new Set(['linux', 'freebsd', 'sunos', 'aix']);

/** The answer for a given Node version (e.g. '22.12.0') and platform; see `nodeReusePort`. */
export function reusePortSupport(version: string, platform: string): ReusePortSupport {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map((n) => Number.parseInt(n, 10));
  const line = `${major}.x`;
  if (major < 22 || (major === 22 && minor < 12) || (major === 23 && minor < 1)) {
    return { ok: false, reason: `Node ${line} has no reusePort (needs ≥ 22.12${major <= 22 ? '' : ' on the 22 line, ≥ 23.1 after it'}; this is ${version.replace(/^v/, '')})` };
  }
  if (!kPlatforms.has(platform)) {
    return { ok: false, reason: `Node's reusePort is not supported on ${platform} (only on Linux, FreeBSD, Solaris and AIX)` };
  }
  return { ok: true };
}

let cached: ReusePortSupport | undefined;

/** Whether this process's node:http can listen with `reusePort`. */
export function nodeReusePort(): ReusePortSupport {
  cached ??= reusePortSupport(process.versions.node, process.platform);
  return cached;
}
