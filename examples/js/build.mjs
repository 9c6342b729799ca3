// Builds the JavaScript operators into WebAssembly components with componentize-js.
// Usage: node build.mjs  (from examples/js; build.sh runs it).
import { componentize } from '@bytecodealliance/componentize-js';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wit = resolve(here, '../../wit');
const operators = [
  { name: 'wordcount', source: 'wordcount/wordcount.js' },
  { name: 'nexmark-q1', source: 'nexmark-q1/q1.js' },
];
const only = process.argv.slice(2);

await mkdir(resolve(here, 'build'), { recursive: true });
for (const op of operators) {
  if (only.length && !only.includes(op.name)) continue;
  const { component } = await componentize({
    sourcePath: resolve(here, op.source),
    witPath: wit,
    worldName: 'operator-world',
    // No WASI beyond what the engine cannot do without: no stdio, random, clocks or http.
    disableFeatures: ['stdio', 'random', 'clocks', 'http', 'fetch-event'],
  });
  const out = resolve(here, 'build', `${op.name}.wasm`);
  await writeFile(out, component);
  console.log(`built ${out} (${component.length} bytes)`);
}
