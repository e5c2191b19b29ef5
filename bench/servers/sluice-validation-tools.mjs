// S8 tools: for each property count, `checked_<n>` declares the full schema (every property typed,
// bounded and required, no others) and `open_<n>` declares only `{ type: 'object' }`. Both get the
// same arguments and answer the same text, so their difference is the argument check alone.
import { defineTool } from '../../dist/src/index.js';
import { kPropertyCounts, shape } from '../../dist/bench/lib/schemas.js';
const answer = () => ({ content: [{ type: 'text', text: 'bench' }] });
export default kPropertyCounts.flatMap((n) => [
  defineTool({ name: `checked_${n}`, description: `${n} checked properties`, inputSchema: shape(n).json, handler: answer }),
  defineTool({ name: `open_${n}`, description: `${n} unchecked properties`, inputSchema: { type: 'object' }, handler: answer }),
]);
