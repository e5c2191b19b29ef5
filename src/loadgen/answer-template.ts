/**
 * A connection's JSON answers, learnt around their id. A server that answers the same call the same
 * way sends the same bytes every time, bar the id: once two parsed answers (to two different ids)
 * were the same text with only the digits after `"id":` changed, those digits are the top-level id
 * (changing them changed the id JSON.parse read, so they are not inside a string, another member or
 * an earlier duplicate "id"), and any answer that is those bytes with another number there parses
 * to the same message with that id: its outcome is the one already classified, without decoding,
 * parsing or copying it. Anything else (another text, an id elsewhere, a split body) is parsed.
 */
import { sameBytes } from './http-conn.js';
import type { Outcome } from './wire.js';

/** The JSON number characters that may follow a number token's digits (then they were not all of it). */
function continuesNumber(code: number): boolean {
  return (code >= 48 && code <= 57) || code === 46 || code === 101 || code === 69;
}

/** Where the digits of `"id":<id>` start in `text` (the first such place whose number ends there), or -1. */
function idDigitsAt(text: string, id: string): number {
  const needle = `"id":${id}`;
  let at = text.indexOf(needle);
  while (at !== -1) {
    const after = at + needle.length;
    if (after >= text.length || !continuesNumber(text.charCodeAt(after))) return at + 5;
    at = text.indexOf(needle, at + 1);
  }
  return -1;
}

export class AnswerTemplate {
  #prefix: Buffer | undefined;
  #suffix: Buffer | undefined;
  #outcome: Outcome | undefined;
  /** The last parsed answer, split around its id's digits, waiting for a second one to confirm it. */
  #candidate: { prefix: string; suffix: string; id: number; outcome: Outcome } | undefined;

  /**
   * The outcome of the answer buf[start, end) to request `id` (a non-negative integer) when it is
   * the learnt bytes with `id` in the id's place; undefined otherwise (then it is parsed).
   */
  match(buf: Buffer, start: number, end: number, id: number): Outcome | undefined {
    const prefix = this.#prefix;
    if (prefix === undefined) return undefined;
    const suffix = this.#suffix!;
    const digits = end - start - prefix.length - suffix.length;
    if (digits < 1 || digits > 15) return undefined;
    const from = start + prefix.length;
    if (digits > 1 && buf[from] === 48) return undefined; // a leading zero is not JSON
    let value = 0;
    for (let i = from; i < from + digits; i++) {
      const d = buf[i]! - 48;
      if (d < 0 || d > 9) return undefined;
      value = value * 10 + d;
    }
    if (value !== id || !sameBytes(buf, start, prefix) || !sameBytes(buf, from + digits, suffix)) return undefined;
    return this.#outcome;
  }

  /** The bytes an answer to `id` that matched had (a body that turned out longer than one read needs them back). */
  bytes(id: number): Buffer {
    return Buffer.concat([this.#prefix!, Buffer.from(String(id), 'latin1'), this.#suffix!]);
  }

  /** After a parse: `text`, the answer to `id`, amounts to `outcome`. Two of them, the same around their ids, teach the template. */
  learn(text: string, id: number, outcome: Outcome): void {
    if (!Number.isSafeInteger(id) || id < 0) return;
    const digits = String(id);
    const at = idDigitsAt(text, digits);
    if (at === -1) {
      this.#candidate = undefined;
      return;
    }
    const prefix = text.slice(0, at);
    const suffix = text.slice(at + digits.length);
    const c = this.#candidate;
    if (c !== undefined && c.id !== id && c.prefix === prefix && c.suffix === suffix && c.outcome.kind === outcome.kind) {
      this.#prefix = Buffer.from(prefix, 'utf8');
      this.#suffix = Buffer.from(suffix, 'utf8');
      this.#outcome = c.outcome;
      this.#candidate = undefined;
      return;
    }
    this.#candidate = { prefix, suffix, id, outcome };
  }
}
