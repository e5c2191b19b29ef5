import { SluiceError } from '../errors.js';
import type { InputRequired, ToolContext } from '../tools/context.js';
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
  get(args: Record<string, string>, ctx: ToolContext): GetPromptResult | string | InputRequired | Promise<GetPromptResult | string | InputRequired>;
  /** Completions for an argument (completion/complete with ref/prompt). */
  complete?: Record<string, (value: string, context: Record<string, string>) => string[] | Promise<string[]>>;
}

export type Prompt = Readonly<PromptDefinition> & { readonly kind: 'sluice/prompt' };

export function definePrompt(definition: PromptDefinition): Prompt {
  if (typeof definition?.name !== 'string' || definition.name === '') throw new SluiceError('invalid_definition', 'a prompt needs a name');
  if (typeof definition.get !== 'function') throw new SluiceError('invalid_definition', `prompt ${definition.name}: get must be a function`);
  return Object.freeze({ ...definition, ...scopesField(`prompt ${definition.name}`, definition.scopes), kind: 'sluice/prompt' as const });
}

export function toPromptResult(output: GetPromptResult | string | InputRequired): GetPromptResult | InputRequired {
  if (typeof output === 'object' && (output as InputRequired).kind === 'sluice/input-required') return output;
  return typeof output === 'string' ? { messages: [{ role: 'user', content: { type: 'text', text: output } }] } : output;
}
