import { createHash, createHmac, randomBytes } from 'node:crypto';
import { KeyScratch, Roster, ShmTable, kIdentityMask, kLive, kSeqShift, kStateMask } from '../../native-free-shm/index.js';
import type { RosterDescriptor, RosterMember, TableDescriptor } from '../../native-free-shm/index.js';

/** Session ids: 128 random bits as 32 hex characters. */
const kIdBytes = 32;
const kVCreated = 0;
const kVSeen = 2;
const kVPrincipal = 4; // 4 words: the first 128 bits of SHA-256(principal id), zero when anonymous
/**
 * logging/setLevel: `tag | level` (level 0xff: never set), where the tag is the session row's
 * sequence number, so a level written for a session whose slot was since reused is never read as
 * the new session's (and a stale writer's compare-and-swap fails).
 */
const kVLogLevel = 8;
const kLevelUnset = 0xff;
const kVCaps = 9; // client capabilities declared at initialize, as kCap* bits
const kVClient = 10; // the creating client's bucket in the per-client session counts
/**
 * The threads that served the session, so that its DELETE tells only those to cancel what of it
 * runs: `tag | kClosed? | bits`. A thread's first lookup of the session sets its bit (its roster
 * index modulo kThreadBits); the tag is the row's sequence number (7 bits of it), as for the log
 * level; the DELETE sets kClosed before it removes the row and reads the bits with it. A lookup
 * either sets its bit before that (the DELETE sees it) or finds the word closed (the session is
 * gone): no thread can start serving a session its DELETE does not know of. (Reading the bits
 * after removing the row instead would miss a lookup that found the row just before.)
 */
const kVThreads = 11;
const kValueWords = 12;
const kThreadBits = 24;
const kThreadMask = (1 << kThreadBits) - 1;
const kClosed = 1 << kThreadBits;
const kThreadsTagShift = kThreadBits + 1;
/**
 * Live sessions per client, counted in buckets of a keyed hash of the client (principal, else
 * address). Two clients sharing a bucket share its limit: collisions can only make the limit
 * stricter, never looser, and the key (random per server) keeps a client from aiming at another's.
 */
const kClientBuckets = 4096;

/** Client capabilities a session remembers (what the server may ask the client for). */
const kCapSampling = 1;
const kCapElicitation = 2;
const kCapRoots = 4;

export function capabilityBits(capabilities: unknown): number {
  if (capabilities === null || typeof capabilities !== 'object') return 0;
  const c = capabilities as Record<string, unknown>;
  return (c.sampling !== undefined ? kCapSampling : 0) | (c.elicitation !== undefined ? kCapElicitation : 0) | (c.roots !== undefined ? kCapRoots : 0);
}

/**
 * The principal digest a session is bound to, as text (cluster mode keeps it in Redis): the first
 * 128 bits of SHA-256(principal id) in hex, '' when anonymous. The table keeps the same bits.
 */
export function principalDigest(principalId: string | undefined): string {
  return principalId === undefined ? '' : createHash('sha256').update(principalId).digest().subarray(0, 16).toString('hex');
}

function makeCapabilities(bits: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if ((bits & kCapSampling) !== 0) out.sampling = Object.freeze({});
  if ((bits & kCapElicitation) !== 0) out.elicitation = Object.freeze({});
  if ((bits & kCapRoots) !== 0) out.roots = Object.freeze({});
  return Object.freeze(out);
}

/** Every combination of the bits, made once and frozen: a session request builds no capabilities object. */
const kCapabilities: readonly Record<string, unknown>[] = Array.from({ length: (kCapSampling | kCapElicitation | kCapRoots) + 1 }, (_, bits) => makeCapabilities(bits));

export function capabilitiesOf(bits: number): Record<string, unknown> {
  return kCapabilities[bits & (kCapabilities.length - 1)] ?? makeCapabilities(bits);
}

/** The tag of a row's log-level word: the row's sequence number (24 bits of it) above the level byte. */
function levelTag(ctl: number): number {
  return ((ctl >>> kSeqShift) & 0xffffff) << 8;
}

/** The tag of a row's threads word (kVThreads): 7 bits of the row's sequence number, at the top. */
function threadsTag(ctl: number): number {
  return ((ctl >>> kSeqShift) & 0x7f) << kThreadsTagShift;
}

/** The threads word's tag bits. */
const kThreadsTagBits = ~(kThreadMask | kClosed);

export interface SessionStoreDescriptor {
  readonly kind: 'sluice/sessions';
  readonly roster: RosterDescriptor;
  readonly table: TableDescriptor;
  /** Live sessions per client bucket (Int32 × kClientBuckets). */
  readonly clients: SharedArrayBuffer;
  /** Key of the client-bucket hash. */
  readonly clientKey: Uint8Array;
}

/** Why a session could not be created: the table is full (503), or this client has its limit (429). */
export type SessionRefusal = 'table_full' | 'client_limit';

export type SessionLookup =
  | { readonly ok: true; readonly slot: number; readonly ctl: number; readonly logLevel: number; readonly capabilities: number }
  | { readonly ok: false };

const kMissing: SessionLookup = Object.freeze({ ok: false });

/**
 * Legacy-era sessions in shared memory, so any HTTP worker can serve any session: id → created,
 * last seen, and a digest of the principal that created it (a session is bound to its principal).
 */
export class SessionStore {
  readonly #roster: Roster;
  readonly #table: ShmTable;
  readonly #member: RosterMember;
  readonly #key = new KeyScratch(kIdBytes);
  readonly #digest = new Int32Array(4);
  readonly #clients: Int32Array;
  readonly #clientBuffer: SharedArrayBuffer;
  readonly #clientKey: Uint8Array;
  /** This thread's bit in a session's threads word (kVThreads). */
  readonly #threadBit: number;
  /** See observeEnds. */
  #onEnd: ((seconds: number) => void) | undefined;

  static create(capacity: number, maxThreads: number): SessionStore {
    const roster = Roster.create({ capacity: maxThreads });
    const table = ShmTable.create({ capacity, maxKeyBytes: kIdBytes, valueWords: kValueWords, tableId: 0 }, roster);
    return new SessionStore({
      kind: 'sluice/sessions', roster: roster.descriptor, table: table.descriptor,
      clients: new SharedArrayBuffer(kClientBuckets * 4), clientKey: new Uint8Array(randomBytes(16)),
    });
  }

  constructor(descriptor: SessionStoreDescriptor) {
    this.#roster = Roster.attach(descriptor.roster);
    this.#table = ShmTable.attach(descriptor.table, this.#roster);
    this.#member = this.#roster.join();
    this.#threadBit = 1 << (this.#member.index % kThreadBits);
    this.#clientBuffer = descriptor.clients;
    this.#clients = new Int32Array(descriptor.clients);
    this.#clientKey = descriptor.clientKey;
  }

  get descriptor(): SessionStoreDescriptor {
    return { kind: 'sluice/sessions', roster: this.#roster.descriptor, table: this.#table.descriptor, clients: this.#clientBuffer, clientKey: this.#clientKey };
  }

  /** The bucket of a client (`principal:<id>` or `ip:<bucket>`) in the per-client session counts. */
  clientBucket(client: string): number {
    return createHmac('sha256', this.#clientKey).update(client).digest().readUInt32LE(0) % kClientBuckets;
  }

  /** Live sessions counted in a client's bucket (tests and metrics). */
  clientSessions(client: string): number {
    return Atomics.load(this.#clients, this.clientBucket(client));
  }

  /**
   * A new session bound to `principalId` (undefined: anonymous), counted against `client`, which
   * may hold at most `maxPerClient` live sessions. A refusal allocates nothing.
   */
  create(principalId: string | undefined, capabilities: number, client: string, maxPerClient: number): { ok: true; id: string } | { ok: false; reason: SessionRefusal } {
    const bucket = this.clientBucket(client);
    if (Atomics.add(this.#clients, bucket, 1) >= maxPerClient) {
      Atomics.sub(this.#clients, bucket, 1);
      return { ok: false, reason: 'client_limit' };
    }
    const id = randomBytes(16).toString('hex');
    this.#key.setString(id);
    const t = this.#table;
    const slot = t.claim(this.#key.words, this.#key.length, t.hash(this.#key.words, this.#key.length), this.#member);
    if (slot < 0) {
      Atomics.sub(this.#clients, bucket, 1);
      return { ok: false, reason: 'table_full' };
    }
    const v = t.valueIndex(slot);
    t.i32[v + kVClient] = bucket;
    const now = Date.now();
    t.f64[(v + kVCreated) >>> 1] = now;
    t.f64[(v + kVSeen) >>> 1] = now;
    this.#principalDigest(principalId);
    for (let i = 0; i < 4; i++) t.i32[v + kVPrincipal + i] = this.#digest[i];
    t.i32[v + kVCaps] = capabilities;
    const ctl = t.publish(slot, this.#member);
    Atomics.store(t.i32, v + kVLogLevel, levelTag(ctl) | kLevelUnset);
    // After publish (the tag is the new ctl's); no lookup precedes it: the id is not out yet.
    Atomics.store(t.i32, v + kVThreads, threadsTag(ctl) | this.#threadBit);
    return { ok: true, id };
  }

  /** The live session with this id, owned by this principal; refreshes its idle clock. */
  lookup(id: string, principalId: string | undefined, idleMs: number): SessionLookup {
    if (id.length !== kIdBytes) return kMissing;
    this.#key.setString(id);
    const t = this.#table;
    const slot = t.find(this.#key.words, this.#key.length, t.hash(this.#key.words, this.#key.length));
    if (slot < 0) return kMissing;
    const ctl = t.matchCtl;
    const v = t.valueIndex(slot);
    const now = Date.now();
    if (now - t.f64[(v + kVSeen) >>> 1] > idleMs) return kMissing;
    this.#principalDigest(principalId);
    for (let i = 0; i < 4; i++) if (t.i32[v + kVPrincipal + i] !== this.#digest[i]) return kMissing;
    if (!this.#served(v + kVThreads, ctl)) return kMissing;
    t.f64[(v + kVSeen) >>> 1] = now;
    const word = Atomics.load(t.i32, v + kVLogLevel);
    const level = (word & ~0xff) === levelTag(ctl) && (word & 0xff) !== kLevelUnset ? word & 0xff : -1;
    return { ok: true, slot, ctl, logLevel: level, capabilities: t.i32[v + kVCaps] };
  }

  /**
   * Cluster mode: puts a session another node created (found in Redis, its principal already
   * checked) into this node's table under the same id, replacing a stale local row of that id.
   * Adopted rows are not counted against a client (creation is what the per-client limit bounds).
   * Only the supervisor adopts (one writer: no two rows of one id). False: the table is full.
   * `servedBefore`: this node held the session until its copy was dropped (another node's
   * logging/setLevel, say), so its requests may still run on any thread here: its DELETE then
   * names every thread. (The DELETE's own message reaches only the other nodes.)
   */
  adopt(id: string, digest: string, capabilities: number, logLevel: number, servedBefore = false): boolean {
    if (id.length !== kIdBytes || !/^([0-9a-f]{32})?$/.test(digest)) return false;
    this.remove(id);
    this.#key.setString(id);
    const t = this.#table;
    const slot = t.claim(this.#key.words, this.#key.length, t.hash(this.#key.words, this.#key.length), this.#member);
    if (slot < 0) return false;
    const v = t.valueIndex(slot);
    t.i32[v + kVClient] = -1;
    const now = Date.now();
    t.f64[(v + kVCreated) >>> 1] = now;
    t.f64[(v + kVSeen) >>> 1] = now;
    const bytes = Buffer.from(digest, 'hex');
    for (let i = 0; i < 4; i++) t.i32[v + kVPrincipal + i] = bytes.length === 0 ? 0 : bytes.readInt32LE(i * 4) | 1;
    t.i32[v + kVCaps] = capabilities;
    const ctl = t.publish(slot, this.#member);
    Atomics.store(t.i32, v + kVLogLevel, levelTag(ctl) | (logLevel >= 0 && logLevel < kLevelUnset ? logLevel : kLevelUnset));
    // Else no thread has served it here yet (the workers look it up once this adoption is answered).
    Atomics.store(t.i32, v + kVThreads, threadsTag(ctl) | (servedBefore ? kThreadMask : 0));
    return true;
  }

  /** When the live session `id` was last used on this node (ms), or undefined (cluster touches). */
  lastSeen(id: string): number | undefined {
    if (id.length !== kIdBytes) return undefined;
    this.#key.setString(id);
    const t = this.#table;
    const slot = t.find(this.#key.words, this.#key.length, t.hash(this.#key.words, this.#key.length));
    return slot < 0 ? undefined : t.f64[(t.valueIndex(slot) + kVSeen) >>> 1];
  }

  /** logging/setLevel: the session's level, seen by every worker. */
  setLogLevel(found: SessionLookup, level: number): void {
    if (!found.ok) return;
    const t = this.#table;
    const at = t.valueIndex(found.slot) + kVLogLevel;
    const tag = levelTag(found.ctl);
    for (;;) {
      const word = Atomics.load(t.i32, at);
      // The session is gone, or its slot already holds another session: nothing to set.
      if (((t.ctl(found.slot) ^ found.ctl) & kIdentityMask) !== 0 || (word & ~0xff) !== tag) return;
      if (Atomics.compareExchange(t.i32, at, word, tag | (level & 0xff)) === word) return;
    }
  }

  /**
   * Told each session's life (seconds) when this thread ends it: by DELETE, from initialize to
   * now; by expiry (the sweep), from initialize to its last use. Not told of rows taken back or
   * replaced (a refused initialize, a cluster adoption): those sessions did not end.
   */
  observeEnds(onEnd: ((seconds: number) => void) | undefined): void {
    this.#onEnd = onEnd;
  }

  /**
   * Ends a session (DELETE). Returns the threads that served it, as roster-index bits (`threadsOf`
   * names them; 0 when another DELETE ended it first): what of the session still runs can only
   * run on those. This thread's own bit is among them (its lookup set it).
   */
  delete(found: SessionLookup): number {
    if (!found.ok) return 0;
    const t = this.#table;
    const v = t.valueIndex(found.slot);
    const created = t.f64[(v + kVCreated) >>> 1];
    const served = this.#close(v + kVThreads, found.ctl);
    if (this.#removeRow(found.slot, found.ctl)) this.#onEnd?.((Date.now() - created) / 1000);
    return served;
  }

  /**
   * Whether what `delete` returned names any thread besides this one: another bit, or this
   * thread's own bit shared with another thread (more than kThreadBits threads on the store).
   */
  namesOthers(bits: number): boolean {
    if ((bits & ~this.#threadBit) !== 0) return true;
    if ((bits & this.#threadBit) === 0) return false;
    const capacity = this.#roster.capacity;
    const own = this.#member.index;
    for (let i = own % kThreadBits; i < capacity; i += kThreadBits) if (i !== own && this.#roster.ownerThread(i) !== undefined) return true;
    return false;
  }

  /**
   * The node threads (`threadId`s) that `delete`'s bits name: each thread that joined this store
   * under a roster index in one of the bits' groups (exactly the servers of the session while at
   * most kThreadBits threads share the store; past that, a bit also names the others of its group).
   */
  threadsOf(bits: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.#roster.capacity; i++) {
      if ((bits & (1 << (i % kThreadBits))) === 0) continue;
      const thread = this.#roster.ownerThread(i);
      if (thread !== undefined) out.push(thread);
    }
    return out;
  }

  /**
   * Marks this thread as serving the session whose threads word is at `at` (incarnation `ctl`);
   * false when the session is gone (its DELETE closed the word, or the slot holds another session
   * now, whose word has another tag). The first lookup per thread writes; later ones only read.
   */
  #served(at: number, ctl: number): boolean {
    return this.#setWhileOpen(at, ctl, this.#threadBit) !== undefined;
  }

  /** DELETE: closes the threads word of incarnation `ctl`; its bits, or 0 when already closed or reused. */
  #close(at: number, ctl: number): number {
    const before = this.#setWhileOpen(at, ctl, kClosed);
    return before === undefined ? 0 : before & kThreadMask;
  }

  /**
   * Sets `bits` in the threads word at `at` while it is incarnation `ctl`'s and open: the word
   * before, or undefined when it is closed or another session's. The compare-and-swap is on the
   * very word checked, so a lookup's bit lands only in an open word of its session, and the DELETE
   * that closes the word afterwards reads it.
   */
  #setWhileOpen(at: number, ctl: number, bits: number): number | undefined {
    const i32 = this.#table.i32;
    const tag = threadsTag(ctl);
    for (;;) {
      const word = Atomics.load(i32, at);
      if ((word & kThreadsTagBits) !== tag || (word & kClosed) !== 0) return undefined;
      if ((word & bits) === bits || Atomics.compareExchange(i32, at, word, word | bits) === word) return word;
    }
  }


  /** Removes a row; whoever actually removed it gives its client's count back (exactly once). */
  #removeRow(slot: number, ctl: number): boolean {
    const t = this.#table;
    const bucket = t.i32[t.valueIndex(slot) + kVClient];
    if (t.remove(slot, ctl) === 0) return false;
    if (bucket >= 0 && bucket < kClientBuckets) Atomics.sub(this.#clients, bucket, 1);
    return true;
  }

  /** Ends the session with this id, if it exists (a refused initialize takes back what it created). */
  remove(id: string): void {
    if (id.length !== kIdBytes) return;
    this.#key.setString(id);
    const t = this.#table;
    const slot = t.find(this.#key.words, this.#key.length, t.hash(this.#key.words, this.#key.length));
    if (slot >= 0) this.#removeRow(slot, t.matchCtl);
  }

  /** Removes sessions idle longer than `idleMs`; returns how many. */
  sweep(idleMs: number): number {
    const t = this.#table;
    const now = Date.now();
    let removed = 0;
    for (let s = 0; s < t.slots; s++) {
      const c = t.ctl(s);
      if ((c & kStateMask) !== kLive) continue;
      const v = t.valueIndex(s);
      const seen = t.f64[(v + kVSeen) >>> 1];
      const created = t.f64[(v + kVCreated) >>> 1];
      if (now - seen > idleMs && this.#removeRow(s, c)) {
        removed++;
        this.#onEnd?.(Math.max(0, seen - created) / 1000);
      }
    }
    return removed;
  }

  threadExited(threadId: number): void {
    this.#roster.release(threadId);
  }

  #principalDigest(principalId: string | undefined): void {
    if (principalId === undefined) {
      this.#digest.fill(0);
      return;
    }
    const d = createHash('sha256').update(principalId).digest();
    for (let i = 0; i < 4; i++) this.#digest[i] = d.readInt32LE(i * 4) | 1; // never all-zero (anonymous)
  }
}
