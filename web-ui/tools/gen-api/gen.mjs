// `npm run gen:api`: writes src/api/schema.gen.ts from src/api/openapi.json.

import { writeFileSync } from 'node:fs';
import { generate, schemaPath } from './index.mjs';

writeFileSync(schemaPath, await generate());
console.log(`wrote ${schemaPath}`);
