import { toPromptResult } from '../../catalog/prompts.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { Method, Run } from '../run.js';
import { ErrorCode, ProtocolError } from '../wire.js';

/** prompts/list and prompts/get, for both eras. */
export function promptMethods(index: CatalogIndex): Array<[string, Method]> {
  return [
    ['prompts/list', { handler: (run, params) => run.era.cacheable(index.page(params, 'prompts', index.promptList)) }],
    ['prompts/get', { handler: (run, params) => getPrompt(index, run, params), names: 'name' }],
  ];
}

async function getPrompt(index: CatalogIndex, run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
  const name = params?.name;
  if (typeof name !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'prompts/get needs a prompt name');
  const prompt = index.prompts.get(name);
  if (prompt === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
  const raw = params?.arguments ?? {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ProtocolError(ErrorCode.InvalidParams, 'arguments must be an object');
  const args: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof v !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, `argument ${k} must be a string`);
    args[k] = v;
  }
  for (const a of prompt.arguments ?? []) {
    if (a.required === true && args[a.name] === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Missing required argument: ${a.name}`);
  }
  const ctx = run.context(run.progressSink(params), run.input(params));
  return { ...toPromptResult(prompt, await prompt.get(args, ctx)) } as Record<string, unknown>;
}
