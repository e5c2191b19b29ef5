export { createRegistry, attachRegistry, registryByteLength, registryMemory, Registry, validRequestId } from './registry.js';
export type {
  RegistryOptions, RegistryDescriptor, CancelResult, CleanupResult, RegistryCounters, RegistryMemory,
} from './registry.js';
export { TrackHandle } from './handle.js';
export type { HandleRef, TrackRefusal } from './handle.js';
export type { RequestId } from './key.js';
export { kMaxIdBytes, kMaxScopeBytes } from './key.js';
export { sanitizeReason, kMaxReasonChars } from './reason.js';
export { clientBucket, deriveScope, formatIPv6 } from './scope.js';
export type { ScopeInputs } from './scope.js';
