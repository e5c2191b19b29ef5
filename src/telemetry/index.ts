export {
  requestCancelledChannel, cancellationCleanupChannel, requestStopChannel, requestKilledChannel,
} from './channels.js';
export type { RequestCancelledEvent, CancellationCleanupEvent } from './channels.js';
