/**
 * The graceful stop of one serving thread, the same for HTTP and stdio: listen streams end, the
 * transport stops taking requests, running requests get the grace to finish; then every one still
 * running is cancelled through the registry and gets a bounded moment to notice.
 */
import type { Engine } from '../protocol/engine.js';

/** The reason shutdown gives requests still running when the grace period ends. */
export const kShutdownReason = 'server shutting down';

/** After that cancel, how long tools get to notice before connections are cut and threads go. */
export const kCancelSettleMs = 250;

/** Resolves when the engine has no request running, or at `deadline` (epoch ms). */
async function settled(engine: Engine, deadline: number): Promise<void> {
  while (engine.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

/**
 * Stops `engine`'s thread gracefully. `endTransport(limitMs)` stops taking requests and resolves
 * once the transport's open exchanges have ended, within `limitMs` (cancelled requests end theirs
 * themselves, so it usually resolves early).
 */
export async function stopGracefully(engine: Engine, graceMs: number, endTransport: (limitMs: number) => Promise<void>): Promise<void> {
  engine.closeListeners(); // listen streams end with their completion result, not a cut
  let cancelledAt = 0;
  const cancel = setTimeout(() => {
    cancelledAt = Date.now();
    engine.cancelAll(kShutdownReason);
  }, graceMs);
  try {
    await endTransport(graceMs + kCancelSettleMs);
  } finally {
    clearTimeout(cancel);
  }
  if (cancelledAt > 0) await settled(engine, cancelledAt + kCancelSettleMs);
}
