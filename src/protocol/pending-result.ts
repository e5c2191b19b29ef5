/**
 * A result still to come together with the step that turns the awaited value into it (a tool's
 * output into its result): the run chains one `then` for both, where returning
 * `promise.then(step)` would cost a promise, a microtask and two closures more per async request.
 */
export abstract class PendingResult {
  constructor(readonly promise: Promise<unknown>) {}
  /** The result for the awaited value; may throw, or return a promise of it, as a handler may. */
  abstract resolved(value: unknown): unknown;
  /** The result for a rejection; may throw, or return a promise of it, as a handler may. */
  abstract rejected(error: unknown): unknown;
}
