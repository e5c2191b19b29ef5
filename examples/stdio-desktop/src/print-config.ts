/**
 * Prints the `mcpServers` entry for this example with this folder's absolute paths filled in,
 * ready to paste into a desktop client's configuration file.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const folder = fileURLToPath(new URL('..', import.meta.url));   // dist/.. is this example's folder
const config = {
  mcpServers: {
    'sluice-example': {
      command: 'node',
      args: [join(folder, 'node_modules', 'sluice', 'bin', 'sluice.js'), 'serve', '--stdio', '--tools', join(folder, 'dist', 'tools.js')],
    },
  },
};
console.log(JSON.stringify(config, null, 2));
