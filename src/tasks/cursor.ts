/**
 * List cursors, the same for every store: a creation position (base 36) and an HMAC of the owner
 * and that position under the store's key, so a cursor of another owner (or a made-up one) is
 * refused, not followed.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SluiceError } from '../errors.js';

/** A cursor read but not yet verified. */
export interface ParsedCursor {
  /** The creation position the page continues below (exclusive). */
  readonly position: number;
  readonly mac: Buffer;
}

export function encodeCursor(key: Buffer, owner: string, position: number): string {
  const at = position.toString(36);
  return `${at}.${mac(key, owner, at).toString('base64url')}`;
}

/** The cursor's position and MAC; `invalid_cursor` when it is not shaped as one. */
export function parseCursor(cursor: unknown): ParsedCursor {
  const match = typeof cursor === 'string' ? /^([0-9a-z]{1,11})\.([A-Za-z0-9_-]{16})$/.exec(cursor) : null;
  if (match === null) throw invalidCursor();
  return { position: parseInt(match[1], 36), mac: Buffer.from(match[2], 'base64url') };
}

/** Throws `invalid_cursor` unless `cursor` was made by `encodeCursor` with this key for this owner. */
export function verifyCursor(key: Buffer, owner: string, cursor: ParsedCursor): void {
  const expected = mac(key, owner, cursor.position.toString(36));
  if (cursor.mac.length !== expected.length || !timingSafeEqual(cursor.mac, expected)) throw invalidCursor();
}

/** How many tasks a page holds: a positive integer asked for, else 1. */
export function pageSize(limit: number): number {
  return Number.isInteger(limit) && limit > 0 ? limit : 1;
}

function mac(key: Buffer, owner: string, position: string): Buffer {
  return createHmac('sha256', key).update(owner).update('\u0000').update(position).digest().subarray(0, 12);
}

function invalidCursor(): SluiceError {
  return new SluiceError('invalid_cursor', 'the cursor is not one this server gave for this list');
}
