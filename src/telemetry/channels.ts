import { channel } from 'node:diagnostics_channel';

/**
 * Sluice's diagnostics channels, made once. Channels are per thread: an event published in a worker
 * thread reaches subscribers in that thread only (see README, "Telemetry").
 */

// The registry's two channels are defined where the registry (below telemetry) can reach them.
export { requestCancelledChannel, cancellationCleanupChannel } from '../registry/channels.js';
export type { RequestCancelledEvent, CancellationCleanupEvent } from '../registry/channels.js';
/** `{ method, durationMs, status }` when a request ends. */
export const requestStopChannel = channel('sluice:request:stop');
/** `{ requestId, scope }` when a request that ignored its cancellation is killed. */
export const requestKilledChannel = channel('sluice:request:killed');
