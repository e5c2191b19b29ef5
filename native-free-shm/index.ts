/**
 * native-free-shm: a lock-free open-addressing hash table over SharedArrayBuffer and Atomics, in
 * plain TypeScript (no native addon), safe for many threads and for threads that die mid-write.
 * See README.md in this folder.
 */
export { ShmTable, kMaxLoad } from './table.js';
export type { TableOptions, TableDescriptor, RecoveredHook } from './table.js';
export { Roster } from './roster.js';
export type { RosterDescriptor, RosterOptions, RosterMember, IntentRecoverer } from './roster.js';
export { KeyScratch } from './key-scratch.js';
export { hashWords, mixWords, finishHash, wordsFor } from './hash.js';
export { ShmError } from './errors.js';
export type { ShmErrorCode } from './errors.js';
export {
  kFlagBit, kWaitedBit, kIdentityMask, kStateMask, kEmpty, kWriting, kLive, kTombstone, kSeqShift,
} from './layout.js';
