// lib/dead-letter.js under Node, its `side-output` import stood in for (test/wit-stubs.mjs):
// side output `dead-letter`, empty key, `[reason, key bin, value bin]` byte for byte as the
// Rust SDK's `dead_letter::send_raw` writes it, the timestamp a BigInt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { register } from 'node:module';
import vm from 'node:vm';

import { encode, decode } from '../lib/msgpack.js';
import { keyString } from '../lib/keyed-state.js';
import { hex } from './helpers.mjs';

register('./wit-stubs.mjs', import.meta.url);
const { deadLetter, deadLetterValue, DEAD_LETTER_OUTPUT } = await import('../lib/dead-letter.js');
const { emitted } = await import('./stubs/side-output.mjs');

test('deadLetter emits [reason, key, value] on the dead-letter side output', () => {
  emitted.length = 0;
  deadLetter(encode('a'), encode(1), 10, 'odd value');          // key bytes, Number time
  deadLetter(keyString(encode('a')), encode(1), 11n, 'odd value'); // key string, BigInt time
  deadLetter('', encode(3), -5, 'no key');
  assert.equal(DEAD_LETTER_OUTPUT, 'dead-letter');
  assert.deepEqual(emitted.map((e) => [e.name, hex(e.key), hex(e.value), e.timestamp]), [
    ['dead-letter', '', '93a96f64642076616c7565c402a161c40101', 10n],
    ['dead-letter', '', '93a96f64642076616c7565c402a161c40101', 11n],
    ['dead-letter', '', '93a66e6f206b6579c400c40103', -5n],
  ]);
});

test('deadLetterValue: lengths past bin8 and str fixstr, and refusals', () => {
  const big = new Uint8Array(51200).map((_, i) => i & 0xff);
  const reason = 'r'.repeat(40);
  const v = deadLetterValue(new Uint8Array([0x6b]), big, reason);
  assert.equal(hex(v.subarray(0, 3 + 40 + 3 + 3)), '93d928' + '72'.repeat(40) + 'c4016b' + 'c5c800');
  assert.equal(v.length, 3 + 40 + 3 + 3 + big.length);
  const [r, k, value] = decode(v);
  assert.equal(r, reason);
  assert.deepEqual([...k], [0x6b]);
  assert.deepEqual(value, big);
  // Byte arrays of another realm, as a componentize-js component gets the host's lists.
  const foreign = vm.runInNewContext('new Uint8Array([7, 0xa1, 0x61, 1]).subarray(1)');
  assert.equal(foreign instanceof Uint8Array, false);
  assert.equal(hex(deadLetterValue(foreign.subarray(0, 2), foreign.subarray(2), 'x')), '93a178c402a161c40101');
  assert.throws(() => deadLetterValue(new Uint8Array(0), 7, 'r'), TypeError);
  assert.throws(() => deadLetterValue([1], new Uint8Array(0), 'r'), TypeError);
  assert.throws(() => deadLetterValue('\u0100', new Uint8Array(0), 'r'), RangeError);
});
