/**
 * Bounds on a value before it crosses a thread or a node. Structured clone serialises a deeply
 * nested value on one side that the other side cannot deserialise (a JSON value 2 000 levels deep
 * sent from a worker to the main thread arrives as a 'messageerror' there, and the sender's call
 * waits for an answer that never comes). So values are checked where they enter, from the
 * network, and refused there with a clear error; the ports check again before posting.
 */

/** Levels of nesting a value from a client may have when it crosses a thread (an answer, a tool's arguments). */
export const kMaxValueDepth = 64;

/** What is wrong with a value, for the error a client gets. */
export interface ValueProblem {
  readonly message: string;
}

/**
 * Undefined when `value` is plain data at most `maxDepth` levels deep (the top level is 1) and,
 * when `maxBytes` is given, at most that many bytes as JSON text (an estimate that never
 * undercounts by much: strings count their UTF-16 length, numbers and keys their text). The walk is
 * iterative, so a hostile value cannot overflow the stack of the thread checking it, and stops at
 * the first problem.
 */
export function valueProblem(value: unknown, maxDepth = kMaxValueDepth, maxBytes = Infinity): ValueProblem | undefined {
  const stack: Array<[unknown, number]> = [[value, 1]];
  let bytes = 0;
  const seen = new Set<object>();
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || v === undefined || typeof v === 'boolean') {
      bytes += 5;
    } else if (typeof v === 'number' || typeof v === 'bigint') {
      bytes += 24;
    } else if (typeof v === 'string') {
      bytes += v.length + 2;
    } else if (typeof v === 'object') {
      if (depth > maxDepth) return { message: `nested too deep (more than ${maxDepth} levels)` };
      // Met again (shared, or a cycle): structured clone copies it once, so it is walked once.
      if (seen.has(v)) continue;
      seen.add(v);
      bytes += 2;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) stack.push([v[i], depth + 1]);
        bytes += v.length;
      } else {
        for (const key of Object.keys(v)) {
          bytes += key.length + 4;
          stack.push([(v as Record<string, unknown>)[key], depth + 1]);
        }
      }
    } else {
      return { message: `not plain data (a ${typeof v})` };
    }
    if (bytes > maxBytes) return { message: `larger than ${maxBytes} bytes` };
  }
  return undefined;
}
