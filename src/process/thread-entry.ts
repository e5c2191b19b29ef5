/** Thread entries: where their compiled modules are, and what every thread that runs tools does first. */
import { SluiceError } from '../errors.js';

/**
 * URL of a compiled thread entry in entries/. Thread entries always run compiled: when this module
 * itself runs from source (the test runner loads TypeScript), point at the build in dist/.
 * The supervisor starts HTTP workers from it; the entry points hand the pool entry to the engine.
 */
export function threadEntry(name: 'http-worker' | 'pool-worker'): URL {
  const fromSource = import.meta.url.endsWith('.ts');
  return new URL(fromSource ? `../../dist/src/process/entries/${name}.js` : `./entries/${name}.js`, import.meta.url);
}

/**
 * Makes process.exit() throw `process_exit_refused` in this thread (a tool calling it then fails as
 * a normal tool error and the thread serves on), as every thread that runs tools does: an HTTP
 * worker ending with its uWS sockets open aborts the whole process, a pool thread ending mid-task
 * fails it with a bare "worker exited". Returns the original, for the thread's own crash path.
 */
export function refuseProcessExit(where: 'an HTTP worker' | 'a pool thread'): (code?: number) => never {
  const original = process.exit.bind(process) as (code?: number) => never;
  process.exit = ((): never => {
    throw new SluiceError('process_exit_refused', `tools must not call process.exit() in ${where}`);
  }) as typeof process.exit;
  return original;
}
