/**
 * URL of a compiled thread entry in entries/. Thread entries always run compiled: when this module
 * itself runs from source (the test runner loads TypeScript), point at the build in dist/.
 * The supervisor starts HTTP workers from it; the entry points hand the pool entry to the engine.
 */
export function threadEntry(name: 'http-worker' | 'pool-worker'): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? `../../dist/src/process/entries/${name}.js` : `./entries/${name}.js`, import.meta.url);
}
