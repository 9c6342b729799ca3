// Unit tests of the JavaScript operators and their helpers, run under Node (the same ES
// modules that componentize-js builds): node --test test/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { encode, decode, ByteWriter, write } from '../lib/msgpack.js';
import { KeyedState, States, keyString } from '../lib/keyed-state.js';
import { operatorDefaults } from '../lib/operator.js';
import { operator as wordcount } from '../wordcount/wordcount.js';
import { operator as q1, dollarsToEuros } from '../nexmark-q1/q1.js';

import { hex, batchOf, recordsOf, changesOf } from './helpers.mjs';

test('msgpack encodes like rmp (shortest forms) and round-trips', () => {
  assert.equal(hex(encode('w1')), 'a27731');
  assert.equal(hex(encode(1)), '01');
  assert.equal(hex(encode(300)), 'cd012c');
  assert.equal(hex(encode(2 ** 32)), 'cf0000000100000000');
  assert.equal(hex(encode(-1)), 'ff');
  assert.equal(hex(encode(-200)), 'd1ff38');
  assert.equal(hex(encode(null)), 'c0');
  assert.equal(hex(encode(true)), 'c3');
  assert.equal(hex(encode(new Uint8Array([1, 2]))), 'c4020102');
  assert.equal(hex(encode('x'.repeat(40))).slice(0, 4), 'd928');
  const value = { a: [1, 'b', null, false], n: 18446744073709551615n, neg: -70000, bin: new Uint8Array([9]) };
  assert.deepEqual(decode(encode(value)), value);
  assert.throws(() => decode(new Uint8Array([0xa3, 0x61])), /end of MessagePack data/);
  // Integers: Number up to ±(2^53 − 1), BigInt beyond, whatever the width they came in.
  const u64 = (v) => new Uint8Array([0xcf, ...hexBytes(v.toString(16).padStart(16, '0'))]);
  const i64 = (v) => new Uint8Array([0xd3, ...hexBytes(BigInt.asUintN(64, v).toString(16).padStart(16, '0'))]);
  assert.equal(decode(u64(2n ** 53n - 1n)), 2 ** 53 - 1);
  assert.equal(decode(u64(2n ** 53n)), 2n ** 53n);
  assert.equal(decode(u64(5n)), 5);
  assert.equal(decode(i64(-(2n ** 53n) + 1n)), -(2 ** 53) + 1);
  assert.equal(decode(i64(-(2n ** 53n))), -(2n ** 53n));
  assert.equal(decode(i64(2n ** 53n)), 2n ** 53n);
  assert.equal(decode(i64(-1n)), -1);
  assert.equal(decode(i64(-(2n ** 63n))), -(2n ** 63n));
  // Strings: ASCII and not, short and long, both ways.
  for (const str of ['', 'a', 'x'.repeat(24), 'x'.repeat(31), 'x'.repeat(32), 'é', 'aé', 'a'.repeat(23) + '☂', '😀'.repeat(20)]) {
    assert.equal(decode(encode(str)), str);
    assert.equal(hex(encode(str)), hex(encodeStrReference(str)));
  }
});

const hexBytes = (h) => h.match(/../g).map((b) => parseInt(b, 16));

/** A str encoded the straightforward way (TextEncoder, shortest header). */
function encodeStrReference(s) {
  const b = new TextEncoder().encode(s);
  const n = b.length;
  const head = n < 32 ? [0xa0 | n] : n < 256 ? [0xd9, n] : [0xda, n >> 8, n & 0xff];
  return new Uint8Array([...head, ...b]);
}

test('KeyedState snapshots only the changes, deletes only what the host holds', () => {
  const s = new KeyedState();
  const states = new States({ s });
  const k = (w) => keyString(encode(w));
  s.set(k('a'), 1).set(k('b'), 2);
  assert.deepEqual(changesOf(states.snapshot(false)), [['s', 'put', 'a', 1], ['s', 'put', 'b', 2]]);
  assert.deepEqual(changesOf(states.snapshot(false)), []);
  s.set(k('a'), 11);
  s.get(k('b'));
  s.set(k('c'), 3);
  s.set(k('c'), 6);
  assert.deepEqual(changesOf(states.snapshot(false)), [['s', 'put', 'a', 11], ['s', 'put', 'c', 6]]);
  s.set(k('fleeting'), 1);
  s.delete(k('fleeting'));
  s.delete(k('b'));
  assert.deepEqual(changesOf(states.snapshot(false)), [['s', 'delete', 'b', null]]);
  s.delete(k('a'));
  s.set(k('a'), 5); // removed and inserted again: a put, and the host still holds it
  assert.deepEqual(changesOf(states.snapshot(false)), [['s', 'put', 'a', 5]]);
  s.delete(k('a'));
  assert.deepEqual(changesOf(states.snapshot(false)), [['s', 'delete', 'a', null]]);
  s.set(k('d'), 4);
  const full = changesOf(states.snapshot(true)).sort();
  assert.deepEqual(full, [['s', 'put', 'c', 6], ['s', 'put', 'd', 4]]);
  assert.deepEqual(changesOf(states.snapshot(false)), []);

  // Restored keys count as held by the host.
  const r = new KeyedState();
  const rs = new States({ s: r });
  rs.restore(states.snapshot(true));
  assert.equal(r.get(k('c')), 6);
  assert.deepEqual(changesOf(rs.snapshot(false)), []);
  r.delete(k('c'));
  assert.deepEqual(changesOf(rs.snapshot(false)), [['s', 'delete', 'c', null]]);
  assert.throws(() => rs.restore({ names: ['other'], data: encode('x'), entries: [{ state: 0, kind: 'put', keyLen: 2, valueLen: 0 }] }),
    (e) => e.tag === 'invalid-state');
});

test('wordcount emits one total per distinct word per batch, and its state restores', () => {
  const w = (word, n, ts) => ({ key: word, value: n, timestamp: ts });
  wordcount.open({});
  assert.deepEqual(recordsOf(wordcount.process(0, batchOf([w('b', 1, 5), w('a', 1, 3), w('b', 2, 4)]))),
    [w('b', 3, 5), w('a', 1, 3)]);
  assert.deepEqual(recordsOf(wordcount.process(0, batchOf([w('a', 1, 9)]))), [w('a', 2, 9)]);
  assert.deepEqual(wordcount.process(0, batchOf([])).entries, []);
  const first = wordcount.snapshot(1n, false);
  assert.deepEqual(changesOf(first), [['counts', 'put', 'b', 3], ['counts', 'put', 'a', 2]]);
  wordcount.process(0, batchOf([w('a', 4, 1)]));
  assert.deepEqual(changesOf(wordcount.snapshot(2n, false)), [['counts', 'put', 'a', 6]]);
  assert.throws(() => wordcount.restore(1, first), (e) => e.tag === 'invalid-state' && /version 1/.test(e.val));
  assert.throws(() => wordcount.process(0, batchOf([{ key: 7, value: 1, timestamp: 0 }])), (e) => e.tag === 'invalid-input');
  assert.throws(() => wordcount.process(0, batchOf([{ key: 'x', value: 'one', timestamp: 0 }])), (e) => e.tag === 'invalid-input');
});

test('q1 converts prices and keeps every other field, in the Rust field order', () => {
  const bid = { auction: 1, bidder: 2, price: 1000, channel: 'web', url: 'u', date_time: 3, extra: '' };
  const out = q1.process(0, batchOf([{ value: bid, timestamp: 42 }]));
  assert.deepEqual(recordsOf(out), [{ key: undefined, value: { ...bid, price: 908 }, timestamp: 42 }]);
  assert.equal(hex(out.data), hex(encode({ ...bid, price: 908 })));
  // Fields in another order are written in the struct's order.
  const shuffled = { extra: '', price: 1000, auction: 1, bidder: 2, channel: 'web', url: 'u', date_time: 3 };
  assert.equal(hex(q1.process(0, batchOf([{ value: shuffled, timestamp: 1 }])).data), hex(encode({ ...bid, price: 908 })));
  assert.equal(dollarsToEuros(18446744073709551615n), 16749643618928272866n);
  assert.equal(dollarsToEuros(999), 907);
  assert.throws(() => q1.process(0, batchOf([{ value: { auction: 1 }, timestamp: 0 }])), (e) => e.tag === 'invalid-input');
});

test('operatorDefaults: empty batches, snapshot and restore of the states, version refusals', () => {
  const empty = { data: new Uint8Array(0), entries: [] };
  const noState = { names: [], data: new Uint8Array(0), entries: [] };
  const s = new KeyedState();
  const op = operatorDefaults(new States({ s }), { stateVersion: 3 });
  assert.deepEqual(Object.keys(op).sort(), ['onTimer', 'onWatermark', 'open', 'restore', 'snapshot']);
  assert.equal(op.open({}), undefined);
  assert.deepEqual(op.onWatermark(1n), empty);
  assert.deepEqual(op.onTimer(new Uint8Array([1]), 1n), empty);
  assert.notEqual(op.onWatermark(1n), op.onWatermark(1n), 'a new batch every call');
  s.set(keyString(encode('a')), 1);
  const saved = op.snapshot(1n, true);
  assert.deepEqual(changesOf(saved), [['s', 'put', 'a', 1]]);
  assert.deepEqual(changesOf(op.snapshot(2n, false)), []);
  assert.throws(() => op.restore(0, saved), (e) => e.tag === 'invalid-state'
    && e.val === 'state schema version 0 cannot be restored by this operator (version 3, migrates from [])');
  const t = new KeyedState();
  const other = operatorDefaults(new States({ t }), { stateVersion: 3 });
  assert.throws(() => other.restore(3, saved), (e) => e.tag === 'invalid-state' && /"s" is not a state/.test(e.val));
  const r = new KeyedState();
  operatorDefaults(new States({ s: r }), { stateVersion: 3 }).restore(3, saved);
  assert.equal(r.get(keyString(encode('a'))), 1);

  // Stateless: an empty state-delta, and only empty chunks of its own version restore.
  const stateless = operatorDefaults(null, { name: 'nexmark-q1' });
  assert.deepEqual(stateless.snapshot(1n, true), noState);
  assert.equal(stateless.restore(0, noState), undefined);
  assert.throws(() => stateless.restore(0, saved), (e) => e.tag === 'invalid-state' && e.val === 'nexmark-q1 has no state');
  assert.throws(() => stateless.restore(1, noState), (e) => e.tag === 'invalid-state' && /version 1 .*\(version 0,/.test(e.val));
  assert.throws(() => operatorDefaults().restore(0, saved), (e) => e.val === 'this operator has no state');
  assert.throws(() => q1.restore(0, saved), (e) => e.val === 'nexmark-q1 has no state');
});

test('the ByteWriter grows', () => {
  const w = new ByteWriter(1);
  for (let i = 0; i < 1000; i++) write(w, i);
  assert.ok(w.len > 1000);
});
