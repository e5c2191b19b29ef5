// S3: CPU-bound tools of a given duration, inline (in the HTTP worker) and in the pool.
import { defineTool } from '../../dist/src/index.js';
const burn = (us) => { const end = process.hrtime.bigint() + BigInt(us) * 1000n; let x = 0; while (process.hrtime.bigint() < end) x++; return x; };
const schema = { type: 'object', properties: { us: { type: 'integer' } } };
export default [
  defineTool({ name: 'cpu_inline', description: 'burns CPU inline', inputSchema: schema, handler: (a) => ({ content: [{ type: 'text', text: String(burn(a.us)) }] }) }),
  defineTool({ name: 'cpu_pool', description: 'burns CPU in the pool', inputSchema: schema, pool: true, handler: (a) => ({ content: [{ type: 'text', text: String(burn(a.us)) }] }) }),
];
