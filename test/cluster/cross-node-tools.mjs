// Fixture tools for the cluster tests: the server-test tools, a tool that asks the client a
// `ping` mid-call (legacy; needs no declared capability, so it works without a session), and an
// authenticate hook (`x-api-key: key-a` → alice, `key-b` → bob) so that requests without sessions
// have a scope every node shares (`principal:…`).
import { defineTool } from 'sluice';
import serverTools from '../fixtures/server-tools.mjs';

export const askPing = defineTool({
  name: 'ask_ping',
  description: 'Sends the client a ping and returns its answer.',
  inputSchema: { type: 'object', properties: {} },
  handler: async (_args, ctx) => ({ answer: await ctx.request('ping', {}) }),
});

const kPrincipals = { 'key-a': 'alice', 'key-b': 'bob' };

export async function authenticate(request) {
  const key = request.header('x-api-key');
  return key === undefined ? undefined : { id: kPrincipals[key] ?? 'unknown' };
}

export default [...serverTools, askPing];
