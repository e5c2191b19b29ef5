import { SluiceError, kindOf } from '../errors.js';
import { isInputRequired } from '../tools/context.js';
import type { InputRequired, ToolContext } from '../tools/context.js';
import { contentBlockProblem } from '../tools/content-shape.js';
import { isRecord } from '../tools/result.js';
import { scopesField } from '../tools/define.js';
import type { ContentBlock } from '../tools/define.js';

export interface PromptArgument {
  name: string;
  title?: string;
  description?: string;
  required?: boolean;
}

export interface PromptMessage {
  role: 'user' | 'assistant';
  content: ContentBlock;
}

export interface GetPromptResult {
  description?: string;
  messages: PromptMessage[];
}

export interface PromptDefinition {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgument[];
  /** OAuth scopes a prompts/get of it needs (with `auth`; besides the server's). */
  scopes?: readonly string[];
  get(args: Record<string, string>, ctx: ToolContext): GetPromptResult | string | InputRequired | PromiseLike<GetPromptResult | string | InputRequired>;
  /** Completions for an argument (completion/complete with ref/prompt). */
  complete?: Record<string, (value: string, context: Record<string, string>) => string[] | PromiseLike<string[]>>;
}

export type Prompt = Readonly<PromptDefinition> & { readonly kind: 'sluice/prompt' };

export function definePrompt(definition: PromptDefinition): Prompt {
  if (typeof definition?.name !== 'string' || definition.name === '') throw new SluiceError('invalid_definition', 'a prompt needs a name');
  if (typeof definition.get !== 'function') throw new SluiceError('invalid_definition', `prompt ${definition.name}: get must be a function`);
  return Object.freeze({ ...definition, ...scopesField(`prompt ${definition.name}`, definition.scopes), kind: 'sluice/prompt' as const });
}

/**
 * The prompts/get result for what `prompt`'s get returned: a string is one user message. Throws
 * (a failure of the prompt, logged; the client gets an internal error) when it returned anything
 * else that is not a prompts/get result, naming the prompt and what is wrong: the official clients
 * check results against the protocol's schema and would fail the call without saying why.
 */
export function toPromptResult(prompt: { readonly name: string }, output: GetPromptResult | string | InputRequired): GetPromptResult | InputRequired {
  if (typeof output === 'string') return { messages: [{ role: 'user', content: { type: 'text', text: output } }] };
  if (isInputRequired(output)) return output;
  const problem = promptResultProblem(output);
  if (problem !== undefined) throw new SluiceError('invalid_result', `prompt ${prompt.name}: get returned something that is not a prompts/get result: ${problem}`);
  return output;
}

function promptResultProblem(output: unknown): string | undefined {
  if (!isRecord(output)) return `$: must be an object or a string, got ${kindOf(output)}`;
  const messages = output.messages;
  if (!Array.isArray(messages)) return `$.messages: must be an array, got ${kindOf(messages)}`;
  if (output.description !== undefined && typeof output.description !== 'string') return `$.description: must be a string, got ${kindOf(output.description)}`;
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isRecord(message)) return `$.messages[${i}]: must be an object, got ${kindOf(message)}`;
    if (message.role !== 'user' && message.role !== 'assistant') return `$.messages[${i}].role: must be 'user' or 'assistant', got ${JSON.stringify(message.role) ?? kindOf(message.role)}`;
    const problem = contentBlockProblem(message.content);
    if (problem !== undefined) return `$.messages[${i}].content${problem}`;
  }
  return undefined;
}
