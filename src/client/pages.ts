import { SluiceError } from '../errors.js';

/**
 * The cursors of one paged list (tools/list, resources/list, …) as a client walks it. A server
 * that hands back a cursor it gave before would be asked for the same pages for ever, and one
 * whose list never ends would be read until memory runs out: both end the walk with
 * `invalid_response`, naming the method, instead of a list that repeats or stops without a word.
 */
export class PageWalk {
  readonly #method: string;
  readonly #maxPages: number;
  readonly #seen = new Set<string>();
  #pages = 0;

  /** `maxPages`: how many pages a walk may take before it ends as a list with no end (default: no bound of its own). */
  constructor(method: string, maxPages = Infinity) {
    this.#method = method;
    this.#maxPages = maxPages;
  }

  /** Pages walked so far. */
  get pages(): number {
    return this.#pages;
  }

  /** The cursor of the page after `result`, or undefined when `result` was the last page. */
  next(result: { readonly nextCursor?: unknown }): string | undefined {
    this.#pages++;
    const cursor = result.nextCursor;
    if (typeof cursor !== 'string') return undefined;
    if (this.#seen.has(cursor)) {
      throw new SluiceError('invalid_response', `the server's ${this.#method} gave the cursor ${JSON.stringify(cursor.slice(0, 80))} a second time (page ${this.#pages}): its pages loop`);
    }
    if (this.#pages >= this.#maxPages) {
      throw new SluiceError('invalid_response', `the server's ${this.#method} still had more after ${this.#maxPages} pages: stopped there rather than read a list with no end`);
    }
    this.#seen.add(cursor);
    return cursor;
  }
}
