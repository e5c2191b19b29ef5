import type { Engine } from '../protocol/engine.js';

/** The reason shutdown gives requests still running when the grace period ends. */
export const kShutdownReason = 'server shutting down';

/** After that cancel, how long tools get to notice before connections are cut and threads go. */
export const kCancelSettleMs = 250;

/** Resolves when the engine has no request running, or at `deadline` (epoch ms). */
export async function settled(engine: Engine, deadline: number): Promise<void> {
  while (engine.running > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}
