/** Errors of the shared-memory table, each with a stable `code` (undici style). */
export type ShmErrorCode = 'shm_invalid_option' | 'shm_bad_descriptor' | 'shm_roster_full';

export class ShmError extends Error {
  readonly code: ShmErrorCode;
  constructor(code: ShmErrorCode, message: string) {
    super(message);
    this.name = 'ShmError';
    this.code = code;
  }
}

export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ShmError('shm_invalid_option', `${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
  }
  return value;
}
