/**
 * What MCP content blocks and resource contents must look like for a client to accept them: the
 * official SDK clients check every result against the protocol's schema, so a tool that returned
 * `{ type: 'text', text: 42 }` would fail the client's whole call with a schema error naming
 * nothing of the tool. These checks let the server say what is wrong, and where, instead.
 * Each answers a path and the problem (`$.content[0].text: must be a string, got a number`) or
 * undefined. They read only what they check, and allocate nothing unless they find something.
 */
import { isRecord, kindOf } from './result.js';

/**
 * Why `blocks` are not MCP content blocks, or undefined. Each must be an object with a string
 * `type`; the five types of the protocol carry their fields as strings (text: `text`; image and
 * audio: `data` and `mimeType`; resource_link: `uri` and `name`; resource: a `resource` that is
 * resource contents). A block of another type passes as given: a type newer than this check.
 * `annotations` and `_meta`, when present, must be objects.
 */
export function contentBlocksProblem(blocks: readonly unknown[], root: string): string | undefined {
  for (let i = 0; i < blocks.length; i++) {
    const problem = contentBlockProblem(blocks[i]);
    if (problem !== undefined) return `${root}[${i}]${problem}`;
  }
  return undefined;
}

/** Why `block` is not one MCP content block ('.text: must be a string, got …'), or undefined. */
export function contentBlockProblem(block: unknown): string | undefined {
  if (!isRecord(block)) return `: a content block must be an object, got ${kindOf(block)}`;
  let problem: string | undefined;
  switch (block.type) {
    case 'text': problem = stringField(block, 'text'); break;
    case 'image': case 'audio': problem = stringField(block, 'data') ?? stringField(block, 'mimeType'); break;
    case 'resource_link': problem = stringField(block, 'uri') ?? stringField(block, 'name'); break;
    case 'resource': {
      const inner = resourceContentsProblem(block.resource);
      if (inner !== undefined) problem = `.resource${inner}`;
      break;
    }
    default: if (typeof block.type !== 'string') problem = `.type: must be a string, got ${kindOf(block.type)}`;
  }
  return problem ?? objectField(block, 'annotations') ?? objectField(block, '_meta');
}

/**
 * Why `contents` is not one item of resources/read's `contents` (or an embedded resource), or
 * undefined: an object with a string `uri` and a string `text` or `blob`; `mimeType` a string and
 * `_meta` an object when present.
 */
export function resourceContentsProblem(contents: unknown): string | undefined {
  if (!isRecord(contents)) return `: resource contents must be an object, got ${kindOf(contents)}`;
  const problem = stringField(contents, 'uri');
  if (problem !== undefined) return problem;
  if (typeof contents.text !== 'string' && typeof contents.blob !== 'string') {
    if (contents.text !== undefined) return `.text: must be a string, got ${kindOf(contents.text)}`;
    if (contents.blob !== undefined) return `.blob: must be a string, got ${kindOf(contents.blob)}`;
    return ': resource contents need a text or a blob string';
  }
  if (contents.mimeType !== undefined && typeof contents.mimeType !== 'string') return `.mimeType: must be a string, got ${kindOf(contents.mimeType)}`;
  return objectField(contents, '_meta');
}

function stringField(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  return typeof value === 'string' ? undefined : `.${key}: must be a string, got ${kindOf(value)}`;
}

/** An optional field that must be a JSON object when present. */
function objectField(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  return value === undefined || isRecord(value) ? undefined : `.${key}: must be an object, got ${kindOf(value)}`;
}
