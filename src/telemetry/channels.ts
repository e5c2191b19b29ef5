import { channel } from 'node:diagnostics_channel';

/**
 * Sluice's diagnostics channels, made once. Channels are per thread: an event published in a worker
 * thread reaches subscribers in that thread only (see README, "Telemetry").
 */

/** `{ requestId, scope, reason }` each time a cancellation is recorded. */
export const requestCancelledChannel = channel('sluice:request:cancelled');
/** `{ removed, inFlightRemoved }` after each `cleanup`. */
export const cancellationCleanupChannel = channel('sluice:cancellation:cleanup');
/** `{ method, durationMs, status }` when a request ends. */
export const requestStopChannel = channel('sluice:request:stop');
/** `{ requestId, scope }` when a request that ignored its cancellation is killed. */
export const requestKilledChannel = channel('sluice:request:killed');

export interface RequestCancelledEvent {
  requestId: string | number;
  scope: string;
  reason: string | undefined;
}

export interface CancellationCleanupEvent {
  removed: number;
  inFlightRemoved: number;
}
