import { defineTool } from 'sluice';

// A stdio server talks MCP on stdout: sluice sends console output, console.log included, to stderr.

const toMetres: Record<string, number> = { m: 1, km: 1000, mi: 1609.344, ft: 0.3048, in: 0.0254 };

export const convertLength = defineTool<{ value: number; from: string; to: string }>({
  name: 'convert_length',
  description: 'Converts a length between m, km, mi, ft and in.',
  inputSchema: {
    type: 'object',
    properties: {
      value: { type: 'number' },
      from: { type: 'string', enum: Object.keys(toMetres) },
      to: { type: 'string', enum: Object.keys(toMetres) },
    },
    required: ['value', 'from', 'to'],
  },
  handler: ({ value, from, to }) => {
    const result = (value * toMetres[from]) / toMetres[to];
    return `${value} ${from} = ${Number(result.toPrecision(6))} ${to}`;
  },
});

export const wordCount = defineTool<{ text: string }>({
  name: 'word_count',
  description: 'Counts the words, lines and characters of a text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  handler: ({ text }) => ({
    words: text.split(/\s+/).filter((w) => w !== '').length,
    lines: text === '' ? 0 : text.split('\n').length,
    characters: [...text].length,
  }),
});

export default [convertLength, wordCount];
