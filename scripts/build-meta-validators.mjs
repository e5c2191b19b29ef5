// After tsc (`npm run build`, `prepare`): the meta-schema validators, compiled by Ajv into
// dist/src/tools/meta-validators/ (see src/tools/meta-validators.ts).
import { writeMetaValidators } from '../dist/src/tools/meta-validators.js';

for (const file of writeMetaValidators()) process.stdout.write(`wrote ${file}\n`);
