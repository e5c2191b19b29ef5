/**
 * Sluice: an MCP server for Node.js built for high-throughput hosting, with a cancellation registry
 * in shared memory. This module is the public API; nothing inside src/ imports it.
 */
export * from './registry/index.js';
export { SluiceError, CancelledError } from './errors.js';
export type { SluiceErrorCode, SluiceErrorWire } from './errors.js';
export {
  requestCancelledChannel, cancellationCleanupChannel, requestStopChannel, requestKilledChannel,
} from './telemetry/index.js';
export type { RequestCancelledEvent, CancellationCleanupEvent } from './telemetry/index.js';
