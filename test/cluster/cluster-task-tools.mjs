// Tools of the three-node, node-kill and interop cluster tests: the task tools (pool_spin, sleepy,
// later_ask, …), the server tools' `echo` and `block`, and a tool that announces a tool list change.
import { defineTool } from 'sluice';
import { block, echo } from '../fixtures/server-tools.mjs';

export * from '../fixtures/task-tools.mjs';
export { block, echo };

export const changeTools = defineTool({
  name: 'change_tools',
  description: 'Announces a tool list change.',
  inputSchema: { type: 'object', properties: {} },
  handler: (_args, ctx) => { ctx.listChanged('tools'); return 'changed'; },
});
