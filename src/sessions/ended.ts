/**
 * What ending a legacy session does to what of it still runs: its client has DELETEd it and will
 * read none of its answers. Shared by the node that serves the DELETE and, in cluster mode, by the
 * other nodes that held the session.
 */
import { deriveScope } from '../registry/index.js';
import type { Registry } from '../registry/index.js';

/** What a request or task of a session its client DELETEd sees as its cancel's reason. */
export const kSessionDeletedReason = 'the client ended its session (DELETE)';

/**
 * Cancels every request and task of session `sessionId` tracked on this node, on every thread (the
 * registry is shared), as its client's own cancel would. Returns how many.
 */
export function cancelSessionRuns(registry: Registry, sessionId: string): number {
  return registry.cancelScope(deriveScope({ sessionId }), kSessionDeletedReason);
}
