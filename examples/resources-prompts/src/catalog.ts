import { defineResource, defineResourceTemplate, definePrompt } from 'sluice';

/** A tiny read-only recipe book. */
const recipes: Record<string, { title: string; minutes: number; steps: string[] }> = {
  pancakes: { title: 'Pancakes', minutes: 20, steps: ['Whisk flour, milk, eggs.', 'Fry thin rounds.', 'Flip once.'] },
  tea: { title: 'Tea', minutes: 5, steps: ['Boil water.', 'Steep 3 minutes.'] },
  'tomato-soup': { title: 'Tomato soup', minutes: 40, steps: ['Roast tomatoes.', 'Simmer with stock.', 'Blend.'] },
};
const slugs = Object.keys(recipes);
const startingWith = (prefix: string) => slugs.filter((s) => s.startsWith(prefix));

/** A fixed resource: one URI, read on demand. A string result is its text. */
export const index = defineResource({
  uri: 'recipes://index',
  name: 'index',
  title: 'All recipes',
  mimeType: 'text/markdown',
  read: () => `# Recipes\n\n${slugs.map((s) => `- ${recipes[s].title}: recipes://recipe/${s}`).join('\n')}\n`,
});

/** A resource template: a family of URIs; `{slug}` is completed from the known slugs. */
export const recipe = defineResourceTemplate({
  uriTemplate: 'recipes://recipe/{slug}',
  name: 'recipe',
  title: 'One recipe',
  mimeType: 'application/json',
  read: (_uri, { slug }) => {
    const found = recipes[slug];
    if (found === undefined) throw new Error(`no recipe named ${slug}`);
    return JSON.stringify(found);
  },
  complete: { slug: startingWith },
});

/** A prompt with arguments; both are completed (completion/complete with ref/prompt). */
export const cook = definePrompt({
  name: 'cook',
  title: 'Cook a recipe',
  description: 'Asks the model to walk you through a recipe.',
  arguments: [
    { name: 'recipe', description: 'a recipe slug', required: true },
    { name: 'servings', description: 'how many people' },
  ],
  get: ({ recipe: slug, servings = '2' }) => {
    const found = recipes[slug];
    if (found === undefined) throw new Error(`no recipe named ${slug}`);
    return `Walk me through cooking ${found.title} for ${servings}, step by step:\n${found.steps.map((s, i) => `${i + 1}. ${s}`).join('\n')}`;
  },
  complete: { recipe: startingWith, servings: (prefix) => ['1', '2', '4', '6'].filter((v) => v.startsWith(prefix)) },
});

export default [index, recipe, cook];
