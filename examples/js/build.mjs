// Builds the JavaScript operators into WebAssembly components with componentize-js.
// Usage: node build.mjs [--out DIR] [--with-test-fixtures] [operator-name...]
//   --out DIR               where the components go (default: build/ next to this file)
//   --with-test-fixtures    also build the test fixtures: the components Weir must refuse,
//                           DIR/wrong-worlds/{v0.1.0,incomplete,foreign-import}.wasm, and
//                           DIR/nexmark-q1-records.wasm (q1 per record, plain API only)
//   operator-name           build only these (wordcount, nexmark-q1, nexmark-q17, or a
//                           fixture name: wrong-worlds/v0.1.0, nexmark-q1-records, ...)
// The operators are built against `encoded-operator-world` (wit/encoded.wit: `operator`
// plus the optional JSON batch path, lib/records.js); the fixtures against their own worlds.
// build.sh runs it after installing the tools; prints one line per built component.
import { componentize } from '@bytecodealliance/componentize-js';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const wit = resolve(repo, 'wit');
const fixtureWit = (name) => resolve(repo, 'engine/test-guests/worlds', name);

const world = 'encoded-operator-world';
const operators = [
  { name: 'wordcount', source: 'wordcount/wordcount.js', wit, world },
  { name: 'nexmark-q1', source: 'nexmark-q1/q1.js', wit, world },
  { name: 'nexmark-q17', source: 'nexmark-q17/q17.js', wit, world },
];
const fixtures = [
  ...['v0.1.0', 'incomplete', 'foreign-import'].map((name) => ({
    name: `wrong-worlds/${name}`,
    source: `tests/wrong-worlds/${name}.js`,
    wit: fixtureWit(name),
    world: 'operator-world',
  })),
  { name: 'nexmark-q1-records', source: 'tests/nexmark-q1-records.js', wit, world: 'operator-world' },
];

let out = resolve(here, 'build');
let withFixtures = false;
const only = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') out = resolve(args[++i] ?? '');
  else if (args[i] === '--with-test-fixtures') withFixtures = true;
  else if (args[i].startsWith('-')) {
    console.error(`build.mjs: unknown option ${args[i]}`);
    process.exit(2);
  } else only.push(args[i]);
}
const all = withFixtures || only.some((n) => fixtures.some((f) => f.name === n)) ? [...operators, ...fixtures] : operators;
const todo = only.length ? all.filter((op) => only.includes(op.name)) : all;
const unknown = only.filter((n) => !all.some((op) => op.name === n));
if (unknown.length) {
  console.error(`build.mjs: unknown operator(s): ${unknown.join(', ')} (known: ${all.map((op) => op.name).join(', ')})`);
  process.exit(2);
}

for (const op of todo) {
  let component;
  try {
    ({ component } = await componentize({
      sourcePath: resolve(here, op.source),
      witPath: op.wit,
      worldName: op.world,
      // No WASI at all: no stdio, random, clocks, http. The component imports only the
      // interfaces of its world.
      disableFeatures: ['stdio', 'random', 'clocks', 'http', 'fetch-event'],
    }));
  } catch (e) {
    console.error(`build.mjs: building ${op.name} from ${op.source} failed: ${e?.message ?? e}`);
    process.exit(1);
  }
  const file = resolve(out, `${op.name}.wasm`);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, component);
  console.log(`built ${file} (${component.length} bytes)`);
}
