/**
 * A refused request, as the gate decides it and the transport writes it. Its own module, free of the
 * JWT verifier's imports (jose): the HTTP endpoint checks for it on every server, the gate is loaded
 * only where `auth` is configured.
 */

/** A refused request: its HTTP status, the `WWW-Authenticate` value (none for 503) and a message. */
export class AuthRefusal {
  readonly status: 401 | 403 | 503;
  readonly challenge: string | undefined;
  readonly message: string;
  constructor(status: 401 | 403 | 503, challenge: string | undefined, message: string) {
    this.status = status;
    this.challenge = challenge;
    this.message = message;
  }
}
