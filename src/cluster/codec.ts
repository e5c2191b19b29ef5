/**
 * The messages nodes send each other on the cluster bus, and their encoding. Short keys: these
 * messages are small and frequent enough (every cross-node cancel, answer, list change) that their
 * field names would otherwise be a good part of their bytes.
 *
 * Encoded with msgpackr (plain maps, no shared record structures: nodes do not share state, so a
 * record definition would have to travel with every message). bench/cluster-codec.ts measured it
 * against JSON on these messages: see bench/results/cluster-codec.md.
 *
 * Decoded by a strict reader of our own instead: whatever another node or Redis sends must be
 * dropped whole if it is not exactly a message (size checked first, a flat map of scalars, valid
 * UTF-8, each field's type and bound), and a general decoder accepts far more than that (nesting,
 * extension types, lossy strings) and decodes a large value in full before anything can refuse it.
 */
import { isUtf8 } from 'node:buffer';
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
  /** The W3C traceparent of the sender's span of this cancel (when it traces), so one trace shows both nodes. */
  readonly p?: string | undefined;
  /** Its tracestate, if any. */
  readonly q?: string | undefined;
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
/** Longest node id (ours are 22 characters; an option may set another) and string request id. */
export const kMaxNodeId = 256;
export const kMaxRequestId = 1024;
/** Longest traceparent and tracestate carried (the bounds the server applies to a `_meta`'s). */
export const kMaxTraceparent = 256;
export const kMaxTracestate = 512;
/**
 * Largest message accepted, checked before a byte of it is decoded: the largest answer (1 Mi UTF-16
 * units, up to 3 bytes each in UTF-8) and the other fields with room to spare.
 */
export const kMaxMessageBytes = 3 * kMaxAnswer + 64 * 1024;
/** No message has more fields than this (an answer has six, a traced cancel seven). */
const kMaxFields = 8;

const kListKinds: ReadonlySet<string> = new Set<ListKind>(['tools', 'resources', 'prompts']);

const packr = new Packr({ useRecords: false, moreTypes: false });

/** `String.prototype.isWellFormed` / `toWellFormed` (ES2024; every Node Sluice runs on has them). */
interface WellFormed { isWellFormed(): boolean; toWellFormed(): string }
const isWellFormed = (value: unknown): boolean => typeof value !== 'string' || (value as unknown as WellFormed).isWellFormed();
const wellFormed = <T>(value: T): T => (isWellFormed(value) ? value : (value as unknown as WellFormed).toWellFormed() as T);

/**
 * Lone UTF-16 surrogates (a client's JSON may carry them) become U+FFFD before encoding: they have
 * no UTF-8 form, and the reader refuses a string that is not valid UTF-8.
 */
export function encodeMessage(message: BusMessage): Buffer {
  const m = message as unknown as Fields;
  if (!isWellFormed(m.f) || !isWellFormed(m.s) || !isWellFormed(m.i) || !isWellFormed(m.r) || !isWellFormed(m.n) || !isWellFormed(m.x) || !isWellFormed(m.p) || !isWellFormed(m.q)) {
    return packr.pack(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, wellFormed(v)])));
  }
  return packr.pack(message);
}

/** The message, or undefined when the bytes are not one (a peer of another version, or not ours). */
export function decodeMessage(bytes: Uint8Array): BusMessage | undefined {
  const read = readMessage(bytes);
  return typeof read === 'string' ? undefined : read;
}

/** The message, or why the bytes are not one (for the link's log line). */
export function readMessage(bytes: Uint8Array): BusMessage | string {
  if (bytes.length > kMaxMessageBytes) return `${bytes.length} bytes, over the ${kMaxMessageBytes} a message may have`;
  const fields = readFlatMap(Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
  return typeof fields === 'string' ? fields : checkMessage(fields) ?? 'fields of the wrong types or sizes, or an unknown kind';
}

const isString = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max;

/** Checks a decoded value field by field: the bus is trusted infrastructure, but not its every writer. */
export function checkMessage(value: unknown): BusMessage | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const m = value as Record<string, unknown>;
  if (!isString(m.f, kMaxNodeId)) return undefined;
  switch (m.k) {
    case 'c':
      if (!isString(m.s, kMaxScope) || (m.r !== undefined && !isString(m.r, kMaxReason))) return undefined;
      if (!isString(m.i, kMaxRequestId) && !Number.isSafeInteger(m.i)) return undefined;
      if ((m.p !== undefined && !isString(m.p, kMaxTraceparent)) || (m.q !== undefined && !isString(m.q, kMaxTracestate))) return undefined;
      return { k: 'c', f: m.f, s: m.s, i: m.i as string | number, r: m.r as string | undefined, p: m.p as string | undefined, q: m.q as string | undefined };
    case 'a':
      if (!isString(m.n, kMaxNodeId) || !Number.isSafeInteger(m.t) || !isString(m.s, kMaxScope) || !isString(m.x, kMaxAnswer)) return undefined;
      return { k: 'a', f: m.f, n: m.n, t: m.t as number, s: m.s, x: m.x };
    case 'l':
      if (typeof m.l !== 'string' || !kListKinds.has(m.l)) return undefined;
      return { k: 'l', f: m.f, l: m.l as ListKind };
    default:
      return undefined;
  }
}

/**
 * Reads one MessagePack map of at most kMaxFields string keys to scalar values (strings, numbers,
 * booleans, nil, undefined), which is all a bus message is, and nothing else: no nesting (so no
 * depth to bound), no extension types, no binary, no duplicate keys, no bytes after the map, and
 * every string valid UTF-8 (a lossy decode could turn two different byte strings into one scope).
 * Each length is checked against the bytes left before anything is allocated. Returns the fields,
 * or why the bytes are refused. msgpackr writes exactly this form for a flat object.
 */
function readFlatMap(bytes: Buffer): Fields | string {
  const r: Reader = { bytes, pos: 0, error: '' };
  const head = bytes[0];
  let count: number;
  if (head === undefined) return 'empty';
  if (head >= 0x80 && head <= 0x8f) { count = head & 0x0f; r.pos = 1; }
  else if (head === 0xde && bytes.length >= 3) { count = bytes.readUInt16BE(1); r.pos = 3; }
  else if (head === 0xdf && bytes.length >= 5) { count = bytes.readUInt32BE(1); r.pos = 5; }
  else return 'not a MessagePack map';
  if (count > kMaxFields) return `${count} fields, over ${kMaxFields}`;
  // One fixed shape, filled by key: no per-key object growth, and no key string made for our own keys.
  const fields: Fields = { k: undefined, f: undefined, s: undefined, i: undefined, r: undefined, n: undefined, t: undefined, x: undefined, l: undefined, p: undefined, q: undefined };
  let seen = 0;
  let others: string[] | undefined;
  for (let i = 0; i < count; i++) {
    let key: string;
    if (bytes[r.pos] === 0xa1 && r.pos + 1 < bytes.length && bytes[r.pos + 1]! < 0x80) {
      key = kAsciiChars[bytes[r.pos + 1]!]!; // a one-character key: every key of ours
      r.pos += 2;
    } else {
      const read = readScalar(r);
      if (read === kBad) return r.error;
      if (typeof read !== 'string' || read.length > 8) return 'a key that is not a short string';
      key = read;
    }
    const bit = key.length === 1 ? kFieldBits[key.charCodeAt(0)] ?? 0 : 0;
    if (bit === 0) {
      // Not a field of ours (a newer peer's, or junk): its value is still checked, then ignored.
      if ((others ??= []).includes(key)) return `field ${JSON.stringify(key)} twice`;
      others.push(key);
    } else if ((seen & bit) !== 0) {
      return `field ${JSON.stringify(key)} twice`;
    }
    seen |= bit;
    const value = readScalar(r);
    if (value === kBad) return `field ${JSON.stringify(key)}: ${r.error}`;
    if (bit !== 0) fields[key as keyof Fields] = value;
  }
  if (r.pos !== bytes.length) return `${bytes.length - r.pos} bytes after the message`;
  return fields;
}

/** Every field a message of any kind may have, absent as undefined. */
interface Fields { k: unknown; f: unknown; s: unknown; i: unknown; r: unknown; n: unknown; t: unknown; x: unknown; l: unknown; p: unknown; q: unknown }

/** A bit per field of ours, by the character code of its one-character key. */
const kFieldBits: readonly (number | undefined)[] = (() => {
  const bits: Array<number | undefined> = [];
  ['k', 'f', 's', 'i', 'r', 'n', 't', 'x', 'l', 'p', 'q'].forEach((key, at) => { bits[key.charCodeAt(0)] = 1 << at; });
  return bits;
})();

interface Reader {
  readonly bytes: Buffer;
  pos: number;
  /** Why the last read returned kBad. */
  error: string;
}

const kBad: unique symbol = Symbol('refused');

function bad(r: Reader, why: string): typeof kBad {
  r.error = why;
  return kBad;
}

/** One scalar at `r.pos` (which it advances), or kBad with `r.error` saying why. */
function readScalar(r: Reader): unknown {
  const { bytes, pos } = r;
  const token = bytes[pos];
  if (token === undefined) return bad(r, 'cut short');
  if (token <= 0x7f) { r.pos = pos + 1; return token; }
  if (token >= 0xe0) { r.pos = pos + 1; return token - 0x100; }
  if (token >= 0xa0 && token <= 0xbf) return readString(r, pos + 1, token & 0x1f);
  const width = scalarWidth(token);
  if (width < 0) return bad(r, `a value of MessagePack type 0x${token.toString(16)} (only strings, numbers, booleans and nil)`);
  if (pos + 1 + width > bytes.length) return bad(r, 'cut short');
  r.pos = pos + 1 + width;
  switch (token) {
    case 0xc0: return null;
    case 0xc2: return false;
    case 0xc3: return true;
    case 0xd4: return bytes[pos + 1] === 0 ? undefined : bad(r, 'an extension type'); // fixext 1, type 0: msgpackr's undefined
    case 0xca: return bytes.readFloatBE(pos + 1);
    case 0xcb: return bytes.readDoubleBE(pos + 1);
    case 0xcc: return bytes[pos + 1];
    case 0xcd: return bytes.readUInt16BE(pos + 1);
    case 0xce: return bytes.readUInt32BE(pos + 1);
    case 0xcf: return safe(r, bytes.readBigUInt64BE(pos + 1));
    case 0xd0: return bytes.readInt8(pos + 1);
    case 0xd1: return bytes.readInt16BE(pos + 1);
    case 0xd2: return bytes.readInt32BE(pos + 1);
    case 0xd3: return safe(r, bytes.readBigInt64BE(pos + 1));
    case 0xd9: return readString(r, pos + 2, bytes[pos + 1]!);
    case 0xda: return readString(r, pos + 3, bytes.readUInt16BE(pos + 1));
    default: return readString(r, pos + 5, bytes.readUInt32BE(pos + 1)); // 0xdb
  }
}

/** Bytes after the type byte for the scalars a message may hold (strings: their length field); -1 for any other type. */
function scalarWidth(token: number): number {
  switch (token) {
    case 0xc0: case 0xc2: case 0xc3: return 0;
    case 0xcc: case 0xd0: case 0xd9: return 1;
    case 0xcd: case 0xd1: case 0xda: case 0xd4: return 2;
    case 0xca: case 0xce: case 0xd2: case 0xdb: return 4;
    case 0xcb: case 0xcf: case 0xd3: return 8;
    default: return -1;
  }
}

function safe(r: Reader, value: bigint): number | typeof kBad {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(value) : bad(r, 'an integer beyond 2^53');
}

/** Short ASCII strings (keys, kinds, ids: most of a message) are read in JS, without a call into C++ or a subarray. */
const kShortAscii = 32;
const kAsciiChars: readonly string[] = Array.from({ length: 128 }, (_, code) => String.fromCharCode(code));
/** Reused for each short string's code units (reads are synchronous: one at a time). */
const units: number[] = [];

function readString(r: Reader, start: number, length: number): string | typeof kBad {
  const { bytes } = r;
  const end = start + length;
  if (end > bytes.length) return bad(r, 'a string longer than the message');
  r.pos = end;
  if (length === 1 && bytes[start]! < 0x80) return kAsciiChars[bytes[start]!]!;
  if (length <= kShortAscii) {
    units.length = 0;
    let i = start;
    while (i < end && bytes[i]! < 0x80) units.push(bytes[i++]!);
    if (i === end) return String.fromCharCode.apply(null, units);
  }
  // Node's decoder turns every invalid sequence into U+FFFD: only a string that has one can be invalid.
  const text = bytes.toString('utf8', start, end);
  if (text.includes('\ufffd') && !isUtf8(bytes.subarray(start, end))) return bad(r, 'a string that is not valid UTF-8');
  return text;
}
