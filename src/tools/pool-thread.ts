import { attachRegistry } from '../registry/index.js';
import type { Registry, RegistryDescriptor } from '../registry/index.js';
import { ToolContext } from './context.js';
import { importToolsModule } from '../catalog/catalog.js';
import { toCallToolResult } from './define.js';
import type { CallToolResult, Tool } from './define.js';
import type { PoolTask } from './pool.js';

let registry: Registry | undefined;
let tools: Promise<Map<string, Tool>> | undefined;

/** Inside a pool thread: load the tools module once, adopt the request's row, run the handler. */
export async function runPoolTask(data: { toolsModule: string; registry: RegistryDescriptor }, task: PoolTask): Promise<CallToolResult> {
  registry ??= attachRegistry(data.registry);
  tools ??= importToolsModule(data.toolsModule).then(({ catalog }) => new Map(catalog.tools.map((t) => [t.name, t])));
  const tool = (await tools).get(task.name);
  if (tool === undefined) throw new Error(`the pool's tools module has no tool named ${task.name}`);
  const port = task.progress;
  const ctx = new ToolContext(registry.adopt(task.ref), { progress: port === undefined ? undefined : (p, t, m) => port.postMessage([p, t, m]) });
  try {
    const result = toCallToolResult(await tool.handler(task.args, ctx));
    return JSON.parse(JSON.stringify(result)) as CallToolResult; // plain data across the thread boundary
  } catch (error) {
    return { content: [{ type: 'text', text: error instanceof Error ? error.message : String(error) }], isError: true };
  } finally {
    port?.close();
  }
}
