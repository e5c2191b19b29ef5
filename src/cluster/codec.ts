/**
 * The messages nodes send each other on the cluster bus, and their encoding. Short keys: these
 * messages are small and frequent enough (every cross-node cancel, answer, list change) that their
 * field names would otherwise be a good part of their bytes.
 *
 * Encoded with msgpackr (plain maps, no shared record structures: nodes do not share state, so a
 * record definition would have to travel with every message). bench/cluster-codec.ts measured it
 * against JSON on these messages: see bench/results/cluster-codec.md.
 */
import { Packr } from 'msgpackr';
import type { ListKind } from '../tools/context.js';

/** A `notifications/cancelled` for a request not running on the sender's node. */
export interface CancelMessage {
  readonly k: 'c';
  /** Sender's node id. */
  readonly f: string;
  /** The registry scope of the client that sent it (`session:…` or `principal:…`). */
  readonly s: string;
  /** The request id. */
  readonly i: string | number;
  /** The reason the client gave, if any. */
  readonly r?: string | undefined;
}

/** A client's answer to a server→client request of node `n`, thread `t`, POSTed to another node. */
export interface AnswerMessage {
  readonly k: 'a';
  readonly f: string;
  /** The node that asked. */
  readonly n: string;
  /** Its thread that asked. */
  readonly t: number;
  /** The scope of the client that answered (the asking thread checks it is the one it asked). */
  readonly s: string;
  /** The answer, as bounded JSON text. */
  readonly x: string;
}

/** A list changed on the sender's node. */
export interface ListMessage {
  readonly k: 'l';
  readonly f: string;
  readonly l: ListKind;
}

export type BusMessage = CancelMessage | AnswerMessage | ListMessage;

/** Longest scope, reason and answer accepted from the bus (a bound, not a protocol rule). */
export const kMaxScope = 1024;
export const kMaxReason = 1024;
export const kMaxAnswer = 1024 * 1024;

const kListKinds: ReadonlySet<string> = new Set<ListKind>(['tools', 'resources', 'prompts']);

const packr = new Packr({ useRecords: false, moreTypes: false });

export function encodeMessage(message: BusMessage): Buffer {
  return packr.pack(message);
}

/** The message, or undefined when the bytes are not one (a peer of another version, or not ours). */
export function decodeMessage(bytes: Uint8Array): BusMessage | undefined {
  let value: unknown;
  try {
    value = packr.unpack(bytes);
  } catch {
    return undefined;
  }
  return checkMessage(value);
}

/** Checks a decoded value field by field: the bus is trusted infrastructure, but not its every writer. */
export function checkMessage(value: unknown): BusMessage | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const m = value as Record<string, unknown>;
  if (typeof m.f !== 'string') return undefined;
  switch (m.k) {
    case 'c':
      if (typeof m.s !== 'string' || m.s.length > kMaxScope) return undefined;
      if (typeof m.i !== 'string' && typeof m.i !== 'number') return undefined;
      if (m.r !== undefined && (typeof m.r !== 'string' || m.r.length > kMaxReason)) return undefined;
      return { k: 'c', f: m.f, s: m.s, i: m.i, r: m.r as string | undefined };
    case 'a':
      if (typeof m.n !== 'string' || typeof m.t !== 'number' || !Number.isSafeInteger(m.t)) return undefined;
      if (typeof m.s !== 'string' || m.s.length > kMaxScope || typeof m.x !== 'string' || m.x.length > kMaxAnswer) return undefined;
      return { k: 'a', f: m.f, n: m.n, t: m.t, s: m.s, x: m.x };
    case 'l':
      if (typeof m.l !== 'string' || !kListKinds.has(m.l)) return undefined;
      return { k: 'l', f: m.f, l: m.l as ListKind };
    default:
      return undefined;
  }
}
