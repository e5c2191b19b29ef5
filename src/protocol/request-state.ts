import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Integrity-protected `requestState` for 2026-07-28 multi-round requests: the state is the client's to
 * carry and ours to trust only after checking. Sealed as base64url(JSON) + "." + base64url(HMAC-SHA256),
 * with the HMAC also covering the method and target name, so a state cannot be replayed elsewhere.
 */
export class RequestStateSealer {
  /** Newest first: sealed with the first, opened with any (a rotation keeps old states valid). */
  readonly #keys: readonly Uint8Array[];

  constructor(keys: Uint8Array | readonly Uint8Array[]) {
    this.#keys = keys instanceof Uint8Array ? [keys] : [...keys];
    if (this.#keys.length === 0) throw new RangeError('RequestStateSealer needs at least one key');
  }

  seal(state: unknown, method: string, target: string): string {
    const payload = Buffer.from(JSON.stringify(state ?? null)).toString('base64url');
    return `${payload}.${this.#mac(this.#keys[0]!, payload, method, target)}`;
  }

  /** The state, or `undefined` when the text was not sealed by us for this method and target. */
  open(text: unknown, method: string, target: string): { ok: true; state: unknown } | { ok: false } {
    if (typeof text !== 'string' || text.length > 64 * 1024) return { ok: false };
    const dot = text.indexOf('.');
    if (dot <= 0) return { ok: false };
    const payload = text.slice(0, dot);
    // Compared as text, not decoded: base64url decoding is lenient (it skips junk and trailing
    // characters), so decoding first would accept MACs with anything appended.
    const given = Buffer.from(text.slice(dot + 1), 'latin1');
    let matched = false;
    for (const key of this.#keys) {
      const expected = Buffer.from(this.#mac(key, payload, method, target), 'latin1');
      if (given.length === expected.length && timingSafeEqual(given, expected)) {
        matched = true;
        break;
      }
    }
    if (!matched) return { ok: false };
    if (!/^[A-Za-z0-9_-]*$/.test(payload)) return { ok: false };
    try {
      return { ok: true, state: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown };
    } catch {
      return { ok: false };
    }
  }

  #mac(key: Uint8Array, payload: string, method: string, target: string): string {
    return createHmac('sha256', key).update(`${method}\u0000${target}\u0000${payload}`).digest('base64url');
  }
}
