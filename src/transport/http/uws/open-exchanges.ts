/** What an exchange carries to be in an `OpenExchanges` list: its own links. */
export interface Linked<T> {
  linkPrev: T | undefined;
  linkNext: T | undefined;
  listed: boolean;
}

/**
 * The exchanges of one listener not yet ended (the body sweep and close walk them): a list linked
 * through the exchanges, so joining and leaving it cost no hashing, unlike a Set.
 */
export class OpenExchanges<T extends Linked<T>> {
  #first: T | undefined;
  size = 0;

  add(ex: T): void {
    const first = this.#first;
    ex.linkNext = first;
    ex.linkPrev = undefined;
    if (first !== undefined) first.linkPrev = ex;
    this.#first = ex;
    ex.listed = true;
    this.size++;
  }

  delete(ex: T): void {
    if (!ex.listed) return;
    ex.listed = false;
    const { linkPrev: prev, linkNext: next } = ex;
    if (prev === undefined) this.#first = next;
    else prev.linkNext = next;
    if (next !== undefined) next.linkPrev = prev;
    ex.linkPrev = undefined;
    ex.linkNext = undefined;
    this.size--;
  }

  /** Calls `fn` on each; `fn` may remove the exchange it is given. */
  forEach(fn: (ex: T) => void): void {
    for (let ex = this.#first; ex !== undefined;) {
      const next = ex.linkNext;
      fn(ex);
      ex = next;
    }
  }
}
