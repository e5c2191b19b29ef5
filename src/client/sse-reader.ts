/**
 * An incremental text/event-stream reader (the WHATWG event-stream format): push decoded text as it
 * arrives, get the `data` of each whole event. Lines may end in CRLF, LF or CR alone (servers built
 * on sse-starlette, the Python SDK's, send CRLF), and a CRLF split between two chunks is still one
 * line end. Used by the client's HTTP transport and by `sluice bench`'s load generator.
 */
export class SseReader {
  /**
   * Text of the event still open, in the pieces it came in: joined only once an event ends in them.
   * Appending each chunk to one string and searching it whole made a server that never ends an
   * event cost time quadratic in what it sent (each search flattened and scanned it all again).
   */
  #held: string[] = [];
  #heldLength = 0;
  /** The last chunk ended in CR: a LF that starts the next one belongs to the same line end. */
  #pendingCr = false;

  /** Whole events' data in `chunk` (appended to what came before); comments and empty events are skipped. */
  push(chunk: string): string[] {
    if (chunk === '') return [];
    if (this.#pendingCr && chunk.charCodeAt(0) === 10) chunk = chunk.slice(1);
    this.#pendingCr = chunk.charCodeAt(chunk.length - 1) === 13; // false for '' (NaN)
    if (chunk === '') return [];
    const text = chunk.includes('\r') ? chunk.replace(/\r\n?/g, '\n') : chunk;
    // A blank line in what is new, or a LF held last and one starting what is new.
    const last = this.#held.at(-1);
    const ends = text.includes('\n\n') || (text.charCodeAt(0) === 10 && last !== undefined && last.charCodeAt(last.length - 1) === 10);
    if (!ends) {
      this.#held.push(text);
      this.#heldLength += text.length;
      return [];
    }
    let buffer = this.#held.length === 0 ? text : `${this.#held.join('')}${text}`;
    const out: string[] = [];
    let end;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let data = '';
      let any = false;
      for (const line of event.split('\n')) {
        if (!line.startsWith('data')) continue;
        // `data` alone is an empty data line; `data:` then one optional space, then the value.
        if (line.length > 4 && line.charCodeAt(4) !== 58) continue;
        const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        data = any ? `${data}\n${value}` : value;
        any = true;
      }
      if (data !== '') out.push(data);
    }
    this.#held = buffer === '' ? [] : [buffer];
    this.#heldLength = buffer.length;
    return out;
  }

  /** Characters held waiting for the end of an event (a bound against a server that never ends one). */
  get pending(): number {
    return this.#heldLength;
  }
}
