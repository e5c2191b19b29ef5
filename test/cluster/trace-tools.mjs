// Tools of the cluster trace test: the cross-node tools (with their authenticate hook: requests
// without sessions get a `principal:…` scope every node shares) and a tool that may run as a task.
import { defineTool } from 'sluice';
import crossNode, { authenticate } from './cross-node-tools.mjs';

export { authenticate };

const taskNap = defineTool({
  name: 'task_nap',
  description: 'Sleeps ms milliseconds; may run as a task.',
  taskSupport: 'optional',
  inputSchema: { type: 'object', properties: { ms: { type: 'number' } } },
  handler: async (args) => { await new Promise((r) => setTimeout(r, Number(args.ms ?? 1))); return 'napped'; },
});

export default [...crossNode, taskNap];
