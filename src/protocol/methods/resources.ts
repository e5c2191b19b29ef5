import { toContents } from '../../catalog/resources.js';
import type { ReadOutput, Resource, ResourceTemplate } from '../../catalog/resources.js';
import { isInputRequired } from '../../tools/context.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { Method, Run } from '../run.js';
import { ErrorCode, ProtocolError } from '../wire.js';

/** resources/list, resources/templates/list and resources/read, for both eras. */
export function resourceMethods(index: CatalogIndex): Array<[string, Method]> {
  return [
    ['resources/list', { handler: (run, params) => run.era.cacheable(index.page(params, 'resources', index.resourceList)) }],
    ['resources/templates/list', { handler: (run, params) => run.era.cacheable(index.page(params, 'resourceTemplates', index.templateList)) }],
    ['resources/read', { handler: (run, params) => readResource(index, run, params), names: 'uri' }],
  ];
}

/** Legacy resources/subscribe and resources/unsubscribe. */
export const subscribeMethod: Method = { handler: (_run, params) => subscribe(params) };

async function readResource(index: CatalogIndex, run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
  const uri = params?.uri;
  if (typeof uri !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'resources/read needs a uri');
  const ctx = run.context(run.progressSink(params), run.input(params));
  const fixed = index.resources.get(uri);
  let output: ReadOutput;
  let source: Resource | ResourceTemplate;
  if (fixed !== undefined) {
    output = await fixed.read(ctx);
    source = fixed;
  } else {
    const { template, variables } = matchTemplate(index.templates, run, uri);
    output = await template.read(uri, variables, ctx);
    source = template;
  }
  if (isInputRequired(output)) return output as unknown as Record<string, unknown>;
  return run.era.cacheable({ contents: toContents(source, uri, output) });
}

/** The first template matching `uri`, with the URI's variables percent-decoded. */
function matchTemplate(templates: readonly ResourceTemplate[], run: Run, uri: string): { template: ResourceTemplate; variables: Record<string, string> } {
  let found: ResourceTemplate | undefined;
  let match: RegExpExecArray | null = null;
  for (const t of templates) {
    match = t.pattern.exec(uri);
    if (match !== null) { found = t; break; }
  }
  if (found === undefined || match === null) throw run.era.resourceNotFound(uri);
  const variables: Record<string, string> = {};
  for (let i = 0; i < found.variables.length; i++) {
    const raw = match[i + 1];
    let value: string;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // Client input (`users://%/profile`): a bad percent-encoding is the client's error, not ours.
      throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid resource URI: malformed percent-encoding', { uri });
    }
    variables[found.variables[i]] = value;
  }
  return { template: found, variables };
}

function subscribe(params: Record<string, unknown> | undefined): Record<string, unknown> {
  if (typeof params?.uri !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'needs a uri');
  // Accepted; resources here do not change, so there is nothing to notify about.
  return {};
}
