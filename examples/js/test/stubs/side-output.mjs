// Stand-in for the world's `weir:operator/side-output@0.2.0` under Node (test/wit-stubs.mjs):
// records every emit as the host would get it.
export const emitted = [];

export function emit(name, key, value, timestamp) {
  if (typeof name !== 'string' || !(key instanceof Uint8Array) || !(value instanceof Uint8Array) || typeof timestamp !== 'bigint') {
    throw new TypeError(`side-output.emit(name: string, key: Uint8Array, value: Uint8Array, timestamp: bigint), got ${[name, key, value, timestamp].map((a) => typeof a)}`);
  }
  emitted.push({ name, key, value, timestamp });
}
