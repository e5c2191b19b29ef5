/**
 * One thread's attachment to a registry's shared memory: the descriptor another thread posts, and
 * what attaching it gives this thread (the two tables, the state words, its roster entry and
 * counters, a key encoder). The in-flight rows, the cancellation rows, the quota policy and the
 * janitor each work on this one record; each copies the fields it reads per request into its own.
 */
import { Roster, ShmTable } from '../../native-free-shm/index.js';
import type { RosterDescriptor, RosterMember, TableDescriptor } from '../../native-free-shm/index.js';
import { SluiceError } from '../errors.js';
import { KeyEncoder } from './key.js';
import { epochBase, kEpochCancelling, kEpochStride, kStMagic, kStateMagic } from './layout.js';
import type { PolicyContext } from './policy.js';

/** Structured-cloneable: post it to any thread and `attachRegistry` it there. */
export interface RegistryDescriptor {
  readonly kind: 'sluice/registry';
  readonly roster: RosterDescriptor;
  readonly inFlight: TableDescriptor;
  readonly cancellations: TableDescriptor;
  readonly state: SharedArrayBuffer;
  readonly maxRows: number;
  readonly maxRowsPerScope: number;
  readonly inFlightCapacity: number;
  readonly buckets: number;
}

export interface Attachment extends PolicyContext {
  readonly descriptor: RegistryDescriptor;
  readonly inFlightCapacity: number;
  readonly member: RosterMember;
  /** Word of roster entry 0's epoch line in `state`, and how many entries have one. */
  readonly epochs: number;
  readonly epochCount: number;
}

/** Attaches the calling thread (joins the roster); throws `bad_descriptor` for anything else. */
export function attach(descriptor: RegistryDescriptor): Attachment {
  if (descriptor?.kind !== 'sluice/registry' || !(descriptor.state instanceof SharedArrayBuffer)) {
    throw new SluiceError('bad_descriptor', 'not a registry descriptor');
  }
  const roster = Roster.attach(descriptor.roster);
  const inFlight = ShmTable.attach(descriptor.inFlight, roster);
  const cancels = ShmTable.attach(descriptor.cancellations, roster);
  const state = new Int32Array(descriptor.state);
  if (Atomics.load(state, kStMagic) !== kStateMagic) throw new SluiceError('bad_descriptor', 'registry state magic mismatch');
  const member = roster.join();
  const epochs = epochBase(descriptor.buckets);
  return {
    descriptor,
    roster,
    inFlight,
    cancels,
    state,
    bucketMask: descriptor.buckets - 1,
    member,
    counters: member.counters,
    cb: member.counterBase,
    enc: new KeyEncoder(inFlight.seed),
    maxRows: descriptor.maxRows,
    maxRowsPerScope: descriptor.maxRowsPerScope,
    inFlightCapacity: descriptor.inFlightCapacity,
    epochs,
    epochCount: Math.max(0, Math.floor((state.length - epochs) / kEpochStride)),
  };
}

/** Word of roster entry `index`'s cancel epoch (its line's word 0), -1 when it has no epoch line. */
export function epochWord(a: Attachment, index: number): number {
  return index < a.epochCount ? a.epochs + index * kEpochStride : -1;
}

/** Word of roster entry `index`'s cancelling word (see kEpochCancelling), -1 when it has no epoch line. */
export function cancellingWord(a: Attachment, index: number): number {
  return index < a.epochCount ? a.epochs + index * kEpochStride + kEpochCancelling : -1;
}
