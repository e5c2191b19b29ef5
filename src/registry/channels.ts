import { channel } from 'node:diagnostics_channel';

/**
 * The two diagnostics channels the registry publishes on. The registry is below telemetry in the
 * layer table, so it names its channels itself: `channel(name)` returns the one channel object of
 * that name in this thread, the same object src/telemetry/channels.ts exports.
 */

/** `{ requestId, scope, reason }` each time a cancellation is recorded. */
export const requestCancelledChannel = channel('sluice:request:cancelled');
/** `{ removed, inFlightRemoved }` after each `cleanup`. */
export const cancellationCleanupChannel = channel('sluice:cancellation:cleanup');

export interface RequestCancelledEvent {
  requestId: string | number;
  scope: string;
  reason: string | undefined;
}

export interface CancellationCleanupEvent {
  removed: number;
  inFlightRemoved: number;
}
