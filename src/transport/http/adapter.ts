import type { Exchange } from './exchange.js';

/** What every HTTP adapter takes. */
export interface AdapterOptions {
  readonly host: string;
  readonly port: number;
  /** Bodies larger than this are refused with 413 as soon as that is known. */
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
