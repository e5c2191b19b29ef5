/**
 * Where a stdio server's stdout carries the protocol, a tool's `console.log` must not land there:
 * one line that is not JSON-RPC makes strict clients close the transport (the MCP stdio transport
 * allows only messages on stdout, and anything on stderr). Each thread that runs a stdio server's
 * tools routes its console's stdout methods to stderr.
 */
import { Console } from 'node:console';

/**
 * Makes every method of this thread's `console` write to stderr (log, info, debug, dir, table,
 * group, count, time… as console.error does), on the console object itself, so code that holds
 * `console` sees it too; a `const log = console.log` taken earlier does not. Returns what undoes it.
 * Direct writes to process.stdout are not caught: they are deliberate.
 */
export function routeConsoleToStderr(): () => void {
  const target = console as unknown as Record<string, unknown>;
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr }) as unknown as Record<string, unknown>;
  const replaced = new Map<string, unknown>();
  // A Console's methods are bound to it: each can stand in for the global one as it is.
  for (const name of Object.keys(toStderr)) {
    if (typeof toStderr[name] !== 'function' || !(name in target)) continue;
    replaced.set(name, target[name]);
    target[name] = toStderr[name];
  }
  return () => {
    for (const [name, original] of replaced) target[name] = original;
  };
}
