import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generate, schemaPath } from '../../tools/gen-api/index.mjs';

/** The first line where `committed` and `expected` differ, or undefined when they are equal. */
function firstDifference(committed: string, expected: string): string | undefined {
  if (committed === expected) return undefined;
  const a = committed.split('\n');
  const b = expected.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `line ${i + 1}: committed ${JSON.stringify(a[i] ?? '<end of file>')}, generated ${JSON.stringify(b[i] ?? '<end of file>')}`;
}

describe('schema.gen.ts', () => {
  it('is what openapi-typescript generates from openapi.json', async () => {
    const committed = readFileSync(schemaPath, 'utf8');
    const expected = await generate();
    expect(
      firstDifference(committed, expected),
      'src/api/schema.gen.ts is not generated from src/api/openapi.json: run `npm run gen:api`',
    ).toBeUndefined();
  }, 60_000);
});
