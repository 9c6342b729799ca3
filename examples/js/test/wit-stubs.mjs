// Module resolution hooks for the unit tests: the world's imports (`weir:operator/<name>@...`)
// resolve to the stand-ins in test/stubs/<name>.mjs, which record what the operator asked of
// the host. A test file registers them before importing a module that uses an import:
//
//   import { register } from 'node:module';
//   register('./wit-stubs.mjs', import.meta.url);
//   const { deadLetter } = await import('../lib/dead-letter.js');
//   const host = await import('./stubs/side-output.mjs');   // the same module instance
export async function resolve(specifier, context, next) {
  const m = /^weir:operator\/([a-z-]+)@/.exec(specifier);
  if (m) return { url: new URL(`./stubs/${m[1]}.mjs`, import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
