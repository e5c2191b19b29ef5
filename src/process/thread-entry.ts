/**
 * URL of a compiled thread entry in workers/. Thread entries always run compiled: when this module
 * itself runs from source (the test runner loads TypeScript), point at the build in dist/.
 * Neutral ground: the supervisor (HTTP workers) and the tool pool (pool threads) both use it.
 */
export function threadEntry(name: 'http-worker' | 'pool-worker'): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? `../dist/workers/${name}.js` : `../workers/${name}.js`, import.meta.url);
}
