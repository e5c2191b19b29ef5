import { SluiceError, kindOf } from '../../errors.js';
import { isRecord } from '../../tools/result.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { Method } from '../run.js';
import { ErrorCode, ProtocolError } from '../wire.js';

/** Most values one completion result carries. */
const kMaxValues = 100;

/** completion/complete, for both eras. */
export function completionMethods(index: CatalogIndex): Array<[string, Method]> {
  return [['completion/complete', { handler: (_run, params) => complete(index, params) }]];
}

type Completer = (value: string, context: Record<string, string>) => string[] | PromiseLike<string[]>;

async function complete(index: CatalogIndex, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
  const ref = params?.ref as Record<string, unknown> | undefined;
  const argument = params?.argument as Record<string, unknown> | undefined;
  if (ref === null || typeof ref !== 'object' || argument === null || typeof argument !== 'object' || typeof argument.name !== 'string' || typeof argument.value !== 'string') {
    throw new ProtocolError(ErrorCode.InvalidParams, 'completion/complete needs ref and argument {name, value}');
  }
  const context = contextArguments(params?.context);
  let completer: Completer | undefined;
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
    const prompt = index.prompts.get(ref.name);
    if (prompt === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown prompt: ${ref.name}`);
    completer = prompt.complete?.[argument.name];
  } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
    const template = index.templates.find((t) => t.uriTemplate === ref.uri);
    if (template === undefined && !index.resources.has(ref.uri)) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown resource: ${ref.uri}`);
    completer = template?.complete?.[argument.name];
  } else {
    throw new ProtocolError(ErrorCode.InvalidParams, 'ref must be ref/prompt or ref/resource');
  }
  const found: unknown = completer === undefined ? [] : await completer(argument.value, context);
  if (!Array.isArray(found)) {
    const owner = ref.type === 'ref/prompt' ? `prompt ${String(ref.name)}` : `template ${String(ref.uri)}`;
    throw new SluiceError('invalid_result', `${owner}: complete.${argument.name} returned ${kindOf(found)}, not an array of strings`);
  }
  const values = found.map(String);
  return { completion: { values: values.slice(0, kMaxValues), total: values.length, hasMore: values.length > kMaxValues } };
}

/**
 * The arguments already given (`context.arguments`), checked: the completer is declared to get
 * strings, and a client may send anything.
 */
function contextArguments(context: unknown): Record<string, string> {
  if (context === undefined || context === null) return {};
  const given = isRecord(context) ? context.arguments : undefined;
  if (isRecord(context) && (given === undefined || given === null)) return {};
  if (!isRecord(given) || !Object.values(given).every((v) => typeof v === 'string')) {
    throw new ProtocolError(ErrorCode.InvalidParams, 'completion/complete: context must be an object, its arguments an object of strings');
  }
  return given as Record<string, string>;
}
