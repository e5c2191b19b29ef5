import type { Exchange } from './exchange.js';

/** What every HTTP adapter takes. */
export interface AdapterOptions {
  readonly host: string;
  readonly port: number;
  /** Bodies larger than this are refused with 413: once read and dropped, or at once past `dropLimit`. */
  readonly maxBodyBytes: number;
  /** A body not fully received this long after the headers gets 408 (slow senders). */
  readonly bodyTimeoutMs: number;
  /**
   * Copy every request header instead of only `kRequestHeaders` (what an authenticate hook may
   * read). Off, the hot path copies the fixed list only.
   */
  readonly allHeaders: boolean;
  readonly handler: (exchange: Exchange) => void;
}

/**
 * A body over maxBodyBytes whose length (declared, or counted so far) is at most this is read to
 * its end and dropped, then answered 413 on a connection that stays open: a server that answers
 * and closes while the client still writes makes the client's kernel reset the connection, and
 * Node's http client, undici's fetch (the official SDK's) and Sluice's client then report EPIPE
 * instead of the 413. Past it the 413 goes at once and the connection is closed (a client that
 * reads early answers, as curl does, still gets it). The body deadline (bodyTimeoutMs) bounds the
 * time either way.
 */
export function dropLimit(maxBodyBytes: number): number {
  return Math.max(64 * 1024 * 1024, maxBodyBytes);
}

/** A listening adapter. */
export interface Listening {
  readonly host: string;
  readonly port: number;
  /** Stops accepting, ends open connections after `graceMs`, resolves when everything is closed. */
  close(graceMs: number): Promise<void>;
  /**
   * Closes the listener and every connection at once, synchronously: what a thread that is about to
   * die must do first (uWS aborts the whole process if a thread ends with its sockets open).
   */
  abort(): void;
}

export type AdapterKind = 'uws' | 'node';
