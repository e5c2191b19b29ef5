/**
 * The shared memory of one server: what the owning thread allocates (registry, counters, legacy
 * sessions, the requestState key ring, the readiness word) and every other thread attaches.
 */
import { randomBytes } from 'node:crypto';
import { createRegistry } from '../registry/index.js';
import type { Registry, RegistryDescriptor, RegistryOptions } from '../registry/index.js';
import { SessionStore } from '../sessions/store.js';
import type { SessionStoreDescriptor } from '../sessions/store.js';
import { ServerCounters } from '../telemetry/counters.js';
import type { ServerCountersDescriptor } from '../telemetry/counters.js';

/**
 * Threads the shared tables make room for: HTTP workers, their pool threads, restarts in flight
 * (stdio: the one thread and its pool). Every table of a server is sized from this.
 */
export const kMaxThreads = 1024;

/** The shared memory every thread of one server attaches. Structured-cloneable. */
export interface SharedState {
  readonly registry: RegistryDescriptor;
  readonly counters: ServerCountersDescriptor;
  readonly sessions: SessionStoreDescriptor | undefined;
  /**
   * Seal 2026-07-28 requestState, newest first: the same ring in every thread, so any worker can
   * open a state (and, given in options, every node and a restarted one).
   */
  readonly stateKeys: readonly Uint8Array[];
  /** Readiness flags (`kNotReady`, transport/http/readiness.ts), written by the owning thread, read by /readyz in every thread. */
  readonly readiness: Int32Array;
}

/** The tables a server owns (made in the thread that owns the server), and what other threads attach. */
export interface SharedTables {
  readonly registry: Registry;
  readonly counters: ServerCounters;
  readonly sessions: SessionStore | undefined;
  readonly shared: SharedState;
}

/** Allocates a server's shared tables: registry, counters, legacy sessions (`maxSessions`, or none). */
export function createSharedTables(registryOptions: RegistryOptions | undefined, maxSessions: number | undefined, stateKeys?: readonly Uint8Array[]): SharedTables {
  const registry = createRegistry({ maxThreads: kMaxThreads, ...registryOptions });
  const counters = ServerCounters.create(kMaxThreads);
  const sessions = maxSessions === undefined ? undefined : SessionStore.create(maxSessions, kMaxThreads);
  return {
    registry, counters, sessions,
    shared: {
      registry: registry.descriptor, counters: counters.descriptor, sessions: sessions?.descriptor,
      stateKeys: stateKeys ?? [randomBytes(32)],
      readiness: new Int32Array(new SharedArrayBuffer(4)),
    },
  };
}
