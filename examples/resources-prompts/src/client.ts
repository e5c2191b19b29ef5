/**
 * Lists, reads, completes and gets what dist/catalog.js serves, with the sluice client.
 * Usage: node dist/client.js [url]   (default http://127.0.0.1:3103/mcp)
 */
import { Client, HttpClientTransport } from 'sluice/client';

const url = process.argv[2] ?? 'http://127.0.0.1:3103/mcp';
const client = new Client(new HttpClientTransport({ url }));
type Named = { uri?: string; uriTemplate?: string; name: string };

try {
  const { resources } = await client.listResources() as { resources: Named[] };
  console.log('resources:', resources.map((r) => r.uri).join(', '));
  const { resourceTemplates } = await client.listResourceTemplates() as { resourceTemplates: Named[] };
  console.log('templates:', resourceTemplates.map((t) => t.uriTemplate).join(', '));

  const index = await client.readResource('recipes://index') as { contents: Array<{ text: string }> };
  console.log(`\nrecipes://index:\n${index.contents[0].text}`);

  // What a client's autocomplete would offer for {slug} after the user typed "t".
  const slugs = await client.complete({ type: 'ref/resource', uri: 'recipes://recipe/{slug}' }, { name: 'slug', value: 't' }) as { completion: { values: string[] } };
  console.log(`complete {slug} from "t": ${slugs.completion.values.join(', ')}`);
  const tea = await client.readResource('recipes://recipe/tea') as { contents: Array<{ text: string }> };
  console.log(`recipes://recipe/tea: ${tea.contents[0].text}`);

  const { prompts } = await client.listPrompts() as { prompts: Named[] };
  console.log('\nprompts:', prompts.map((p) => p.name).join(', '));
  const recipeArg = await client.complete({ type: 'ref/prompt', name: 'cook' }, { name: 'recipe', value: 'p' }) as { completion: { values: string[] } };
  console.log(`complete cook's recipe from "p": ${recipeArg.completion.values.join(', ')}`);
  const prompt = await client.getPrompt('cook', { recipe: 'pancakes', servings: '4' }) as { messages: Array<{ role: string; content: { text: string } }> };
  for (const m of prompt.messages) console.log(`cook -> ${m.role}: ${m.content.text}`);
} finally {
  await client.close();
}
