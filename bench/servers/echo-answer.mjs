// The raw echoes' answer (S1's ceilings, the hardened floor, and bench/endpoint.ts's loop): one
// definition, so the loop times exactly what the servers build per request.

/** The JSON-RPC result for an echo request `m`: its `arguments.text` back as one text block. */
export function echoAnswer(m) {
  return JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: m.params.arguments.text }] } });
}
