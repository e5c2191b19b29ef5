/**
 * What MCP content blocks and resource contents must look like for a client to accept them: the
 * official SDK clients check every result against the protocol's schema, so a tool that returned
 * `{ type: 'text', text: 42 }` would fail the client's whole call with a schema error naming
 * nothing of the tool. These checks let the server say what is wrong, and where, instead.
 * Each answers a path and the problem (`$.content[0].text: must be a string, got a number`) or
 * undefined. They read only what they check, and allocate nothing unless they find something.
 */
import { kindOf } from '../errors.js';
import { isRecord } from './result.js';

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
    case 'image': case 'audio': problem = base64Field(block, 'data') ?? stringField(block, 'mimeType'); break;
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
  if (typeof contents.text !== 'string') {
    if (typeof contents.blob === 'string') {
      if (!isBase64(contents.blob)) return notBase64('blob');
    } else {
      if (contents.text !== undefined) return `.text: must be a string, got ${kindOf(contents.text)}`;
      if (contents.blob !== undefined) return `.blob: must be a string, got ${kindOf(contents.blob)}`;
      return ': resource contents need a text or a blob string';
    }
  }
  if (contents.mimeType !== undefined && typeof contents.mimeType !== 'string') return `.mimeType: must be a string, got ${kindOf(contents.mimeType)}`;
  return objectField(contents, '_meta');
}

function stringField(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  return typeof value === 'string' ? undefined : `.${key}: must be a string, got ${kindOf(value)}`;
}

/** A string field holding binary data: base64, as the SDK clients check it (with `atob`). */
function base64Field(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  if (typeof value !== 'string') return `.${key}: must be a string, got ${kindOf(value)}`;
  return isBase64(value) ? undefined : notBase64(key);
}

/** The problem of a binary field that is not base64. */
function notBase64(key: string): string {
  return `.${key}: must be base64 (A–Z, a–z, 0–9, + and /, padded with =), got a string that is not`;
}

/** Base64 with nothing else in it (the common case, one regular-expression pass even over megabytes). */
const kPlainBase64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Whether `text` is base64 as `atob` reads it (WHATWG forgiving-base64, what the official SDK
 * clients' schema runs): ASCII whitespace is ignored, at most two `=` at the end and only when they
 * fill the last group of four, and no group of one character.
 */
export function isBase64(text: string): boolean {
  if (kPlainBase64.test(text)) return groupsComplete(text.length, text.endsWith('=') ? 1 : 0);
  // With whitespace (MIME-style line breaks): one pass, counting, no copy.
  let length = 0;
  let padding = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) continue;
    length++;
    if (c === 0x3d) { // '='
      if (++padding > 2) return false;
    } else if (padding > 0 || !((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f)) {
      return false;
    }
  }
  return groupsComplete(length, padding);
}

/** `length` characters of base64, the last `padding` of them `=` (0 or more): whole groups when padded, never a group of one. */
function groupsComplete(length: number, padding: number): boolean {
  return padding > 0 ? length % 4 === 0 : length % 4 !== 1;
}

/** An optional field that must be a JSON object when present. */
function objectField(object: Record<string, unknown>, key: string): string | undefined {
  const value = object[key];
  return value === undefined || isRecord(value) ? undefined : `.${key}: must be an object, got ${kindOf(value)}`;
}
