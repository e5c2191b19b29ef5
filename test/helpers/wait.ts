// Waiting for an effect in tests, rather than for a fixed time. No imports: the protocol and
// telemetry tests use it without loading a server.

/** Polls until `check` is true (bounded; throws on time-out). */
export async function until(check: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
