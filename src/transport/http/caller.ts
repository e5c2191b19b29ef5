/**
 * Who the client is: the authenticate hook's principal, its address (the socket peer, or the last
 * X-Forwarded-For hop behind a trusted proxy) and its registry scope. Scopes come from the
 * registry's `deriveScope` (the one implementation), fed one reused input object, with the address
 * bucket remembered for keep-alive clients.
 */
import { deriveScope } from '../../registry/index.js';
import type { Exchange } from './exchange.js';

/** What `authenticate` sees of a request. */
export interface AuthRequest {
  header(name: string): string | undefined;
  readonly remoteAddress: string;
}

/** An authenticated caller; only a string `id` scopes requests (two principals never share a cancellation scope). */
export interface Principal {
  readonly id?: unknown;
}

export type Authenticate = (request: AuthRequest) => Principal | undefined | null | Promise<Principal | undefined | null>;

/** The hook threw or rejected: 401. */
export const kRefused = false;

export class Clients {
  readonly #authenticate: Authenticate | undefined;
  readonly #trustProxy: boolean;
  /** deriveScope's input, reused (deriveScope is synchronous and keeps nothing). */
  readonly #inputs: { sessionId: string | undefined; principal: { id: unknown } | undefined; address: string | undefined } = {
    sessionId: undefined, principal: undefined, address: undefined,
  };
  readonly #principal = { id: undefined as unknown };
  #lastAddress: string | undefined;
  #lastScope = '';

  constructor(authenticate: Authenticate | undefined, trustProxy: boolean) {
    this.#authenticate = authenticate;
    this.#trustProxy = trustProxy;
  }

  get authenticates(): boolean {
    return this.#authenticate !== undefined;
  }

  /** The principal's id (a string, else undefined), or `kRefused` when the hook failed. */
  async principal(ex: Exchange): Promise<string | undefined | typeof kRefused> {
    const auth = this.#authenticate;
    if (auth === undefined) return undefined;
    try {
      const principal = await auth({ header: (name) => ex.header(name.toLowerCase()), remoteAddress: ex.remoteAddress });
      const id = principal?.id;
      return typeof id === 'string' ? id : undefined;
    } catch {
      return kRefused;
    }
  }

  /** The client's scope without a session: `principal:<id>`, else `ip:<bucket>`. What per-client limits count. */
  scope(principalId: string | undefined, ex: Exchange): string {
    if (principalId !== undefined) {
      this.#principal.id = principalId;
      return this.#derive(undefined, this.#principal, undefined);
    }
    const address = this.#address(ex);
    if (address !== this.#lastAddress) {
      this.#lastAddress = address;
      this.#lastScope = this.#derive(undefined, undefined, address);
    }
    return this.#lastScope;
  }

  /** A legacy session's scope: `session:<id>`. */
  sessionScope(sessionId: string): string {
    return this.#derive(sessionId, undefined, undefined);
  }

  #derive(sessionId: string | undefined, principal: { id: unknown } | undefined, address: string | undefined): string {
    const inputs = this.#inputs;
    inputs.sessionId = sessionId;
    inputs.principal = principal;
    inputs.address = address;
    return deriveScope(inputs);
  }

  #address(ex: Exchange): string {
    if (this.#trustProxy) {
      const forwarded = ex.header('x-forwarded-for');
      if (forwarded !== undefined) {
        const hops = forwarded.split(',');
        // The last hop is the one our own proxy appended: the only entry a client cannot forge.
        return hops[hops.length - 1].trim();
      }
    }
    return ex.remoteAddress;
  }
}
