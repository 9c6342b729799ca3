// Generates the TypeScript types of the Weir API (src/api/schema.gen.ts) from the committed
// OpenAPI document (src/api/openapi.json). This package has its own TypeScript 5:
// openapi-typescript builds its output with the TypeScript compiler API, which the UI's
// TypeScript 7 does not ship.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const api = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'api');

/** The committed OpenAPI document, written by the engine's `api::openapi` tests. */
export const documentPath = join(api, 'openapi.json');

/** The generated types. */
export const schemaPath = join(api, 'schema.gen.ts');

export const HEADER = `// Generated from openapi.json by openapi-typescript: do not edit. Run \`npm run gen:api\`.
// openapi.json itself is the server's document: \`WEIR_BLESS=1 cargo nextest run --workspace -E 'test(/^api::openapi::/)'\`.

`;

/** The contents of schema.gen.ts for the document at `path`. */
export async function generate(path = documentPath) {
  const document = JSON.parse(readFileSync(path, 'utf8'));
  // A field the document does not list as required is optional, default or not: the same
  // schemas describe what the UI sends (a job spec) and what it reads. A bare `object`
  // (a node's `config`) is any object, not an empty one.
  const ast = await openapiTS(document, { defaultNonNullable: false, emptyObjectsUnknown: true });
  return HEADER + astToString(ast);
}
