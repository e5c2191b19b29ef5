import { afterEach } from 'vitest';

/**
 * Registers, for the calling test file, a clean-up list run after each test in reverse order,
 * every step attempted whatever the others did; failures are thrown together. Returns the function
 * that adds a step.
 */
export function cleanupAfterEach(): (step: () => Promise<unknown> | unknown) => void {
  const steps: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    const errors: unknown[] = [];
    for (const fn of steps.splice(0).reverse()) {
      try {
        await fn();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, 'clean-up failed');
  });
  return (step) => { steps.push(step); };
}
