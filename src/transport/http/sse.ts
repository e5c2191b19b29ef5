/** SSE framing for MCP streams. */
export const kSseHeaders: readonly (readonly [string, string])[] = [
  ['content-type', 'text/event-stream'],
  ['cache-control', 'no-cache, no-transform'],
  ['x-accel-buffering', 'no'],
];

/** One `message` event carrying a JSON-RPC message (JSON text never contains a raw newline). */
export function sseEvent(json: string): string {
  return `event: message\ndata: ${json}\n\n`;
}
