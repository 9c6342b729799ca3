// Unit tests of the batch API (lib/records.js): the JSON path (`processEncoded`, fed as the
// host would feed it, test/host.mjs) and the plain path (`operator.process`) give the same
// output bytes for the same batch.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { encode, decode, ByteWriter } from '../lib/msgpack.js';
import { batchOperator, decodeBatch, encodeKey, decodeKey, keyBytes, keyString } from '../lib/records.js';
import { hex, batchOf } from './helpers.mjs';
import { toJsonDocument, fromJsonDocument, hostProcess } from './host.mjs';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A fresh module instance (its own state) of an operator file. */
let instances = 0;
const fresh = (path) => import(`${path}?instance=${++instances}`);

/** The same batches through the JSON path of one instance and the plain path of another. */
async function bothPaths(path, batches) {
  const a = await fresh(path);
  const b = await fresh(path);
  const out = [];
  for (const batch of batches) {
    const doc = toJsonDocument(batch);
    assert.notEqual(doc, null, 'the batch qualifies for JSON');
    const json = fromJsonDocument(dec.decode(a.encodedBatches.processEncoded(0, enc.encode(doc))));
    const plain = b.operator.process(0, batch);
    assert.equal(hex(json.data), hex(plain.data), `${path}: the same output bytes`);
    assert.deepEqual(json.entries, plain.entries, `${path}: the same entries`);
    out.push(plain);
  }
  return { a, b, out };
}

/** A seeded generator (mulberry32); the seed is printed. */
function rng(seed) {
  console.log(`records.test: seed ${seed}`);
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function bids(random, n, keyed) {
  return Array.from({ length: n }, (_, i) => {
    const auction = 1000 + Math.floor(random() * 50);
    const bid = {
      auction, bidder: Math.floor(random() * 1e6), price: Math.floor(random() * 1e8 * random()),
      channel: ['web', 'mobile', 'Kanal ☂'][i % 3], url: `https://x/${i}`, date_time: 1_700_000_000_000 + i,
      extra: random() < 0.1 ? 'é'.repeat(40) : '',
    };
    return { key: keyed ? auction : undefined, value: bid, timestamp: 1_700_000_000_000 + i };
  });
}

test('wantedFormat is json; an empty batch gives an empty document', async () => {
  const q1 = await fresh('../nexmark-q1/q1.js');
  assert.equal(q1.encodedBatches.wantedFormat(), 'json');
  assert.equal(dec.decode(q1.encodedBatches.processEncoded(0, enc.encode('[]'))), '[]');
  assert.throws(() => q1.encodedBatches.processEncoded(0, enc.encode('[[')), (e) => e.tag === 'invalid-input');
  assert.throws(() => q1.encodedBatches.processEncoded(0, enc.encode('{}')), (e) => e.tag === 'invalid-input');
});

test('q1, q17 and word count: the JSON path and the plain path give the same bytes', async () => {
  const random = rng(Number(process.env.WEIR_JS_SEED ?? 20));
  const unkeyed = [0, 1, 2].map(() => batchOf(bids(random, 200, false)));
  await bothPaths('../nexmark-q1/q1.js', unkeyed);
  const keyed = [0, 1, 2].map(() => batchOf(bids(random, 300, true)));
  const { a, b } = await bothPaths('../nexmark-q17/q17.js', keyed);
  // The same state too.
  assert.equal(hex(a.operator.snapshot(1n, true).data), hex(b.operator.snapshot(1n, true).data));
  const words = ['a', 'b', 'ü', 'x'.repeat(40), 'a'];
  const wc = [0, 1, 2].map(() => batchOf(Array.from({ length: 100 }, (_, i) => ({
    key: words[Math.floor(random() * words.length)], value: 1 + (i % 3), timestamp: Math.floor(random() * 1000),
  }))));
  await bothPaths('../wordcount/wordcount.js', wc);
});

test('q1 on the batch API gives the bytes of the per-record q1 (the test fixture)', async () => {
  const random = rng(Number(process.env.WEIR_JS_SEED ?? 21));
  const records = await import('../tests/nexmark-q1-records.js');
  const q1 = await fresh('../nexmark-q1/q1.js');
  const batch = batchOf([...bids(random, 500, true), ...bids(random, 500, false)]);
  const expected = records.operator.process(0, batch);
  for (const got of [hostProcess(q1, 0, batch).batch, q1.operator.process(0, batch)]) {
    assert.equal(hex(got.data), hex(expected.data));
    assert.deepEqual(got.entries, expected.entries);
  }
  // Fields in another order, arrays of the seven fields, u64 past 2^53 (the plain path).
  const odd = batchOf([
    { value: { extra: '', price: 1000, auction: 1, bidder: 2, channel: 'web', url: 'u', date_time: 3, more: [1] }, timestamp: 1 },
    { value: [1, 2, 1000, 'web', 'u', 3, 'x'], timestamp: 2 },
    { value: { auction: 18446744073709551615n, bidder: 2, price: 18446744073709551615n, channel: 'web', url: 'u', date_time: 3, extra: '' }, timestamp: 3 },
  ]);
  assert.equal(hostProcess(q1, 0, odd).path, 'plain');
  assert.equal(hex(q1.operator.process(0, odd).data), hex(records.operator.process(0, odd).data));
  // The same errors.
  for (const value of [{ auction: 1 }, 'bid', [1, 2], { auction: 1, bidder: 2, price: -1, channel: 'c', url: 'u', date_time: 3, extra: '' },
    { auction: 1, bidder: 2, price: 1.5, channel: 'c', url: 'u', date_time: 3, extra: '' },
    { auction: 1, bidder: 2, price: 1, channel: 7, url: 'u', date_time: 3, extra: '' }]) {
    const bad = batchOf([{ value, timestamp: 0 }]);
    let expectedError;
    assert.throws(() => records.operator.process(0, bad), (e) => { expectedError = e; return true; });
    assert.throws(() => q1.operator.process(0, bad), (e) => assert.deepEqual(e, expectedError) ?? true);
    assert.throws(() => hostProcess(q1, 0, bad), (e) => assert.deepEqual(e, expectedError) ?? true);
  }
});

/** An operator that emits what `f(value)` returns for every record (its own key and time). */
function mapper(f) {
  const op = batchOperator((_input, records, out) => {
    for (const [key, value, ts] of records) out.push([key, f(value), ts]);
  });
  return { operator: { process: op.process }, encodedBatches: op.encodedBatches };
}

test('numbers: the plain encoder follows JSON.stringify and the host rule', () => {
  const values = [0, -0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, 2 ** 32, -(2 ** 31) - 1,
    2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, -(2 ** 53), 0.1, -1.5, 1e21, 1e-7, 123456789.125, 5e-324,
    Number.MAX_VALUE, NaN, Infinity, -Infinity];
  const op = mapper((v) => v.map((x) => x * 1)); // floats made by the operator
  const batch = batchOf([{ key: 'k', value: values.filter(Number.isFinite), timestamp: 1 }]);
  const plain = op.operator.process(0, batch);
  const json = hostProcess(op, 0, batch);
  assert.equal(json.path, 'json');
  assert.equal(hex(json.batch.data), hex(plain.data));
  // Now the numbers themselves, from the operator.
  const emit = mapper(() => values);
  const one = batchOf([{ value: null, timestamp: 5 }]);
  const fromPlain = emit.operator.process(0, one);
  const fromJson = hostProcess(emit, 0, one).batch;
  assert.equal(hex(fromJson.data), hex(fromPlain.data));
  const f64 = (x) => { const b = new Uint8Array(9); b[0] = 0xcb; new DataView(b.buffer).setFloat64(1, x); return hex(b); };
  assert.equal(hex(fromPlain.data), `dc001c` + ['00', '00', '01', 'ff', '7f', 'cc80', 'e0', 'd0df', 'ccff', 'cd0100',
    'cdffff', 'ce00010000', 'cf0000000100000000', 'd3ffffffff7fffffff',
    'cf001fffffffffffff', 'd3ffe0000000000001', f64(2 ** 53), f64(-(2 ** 53)), f64(0.1), f64(-1.5), f64(1e21), f64(1e-7),
    f64(123456789.125), f64(5e-324), f64(Number.MAX_VALUE), 'c0', 'c0', 'c0'].join(''));
  // lib/msgpack.js `write` (keys, state) writes any non-safe-integer Number as a float64.
  assert.equal(hex(encode(0.5)), f64(0.5));
  assert.equal(hex(encode(NaN)), f64(NaN));
  assert.equal(decode(encode(2 ** 60)), 2 ** 60);
});

test('values: objects, strings and what JSON.stringify leaves out agree on both paths', () => {
  const input = {
    s: 'ünïcødé ☂ 😀', empty: {}, list: [[], [null, true, false]], nested: { '10': 1, b: { c: 'd' }, '2': 2 },
    long: 'x'.repeat(70000), many: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])),
  };
  const bytes = encode(input);
  const viaJson = JSON.parse(toJsonDocument({ data: bytes, entries: [{ keyLen: 0, valueLen: bytes.length, timestamp: 0n }] }))[0][1];
  assert.deepEqual(decode(bytes, 0, bytes.length, { json: true }), viaJson, 'the plain decoder gives what JSON.parse gives');
  // `__proto__` is an own property after JSON.parse; the plain decoder keeps it so too.
  const proto = new ByteWriter();
  proto.byte(0x82); proto.bytes(encode('__proto__')); proto.bytes(encode({ x: 1 })); proto.bytes(encode('y')); proto.bytes(encode(2));
  const p = decode(proto.toBytes(), 0, proto.len, { json: true });
  assert.deepEqual(Object.keys(p), ['__proto__', 'y']);
  assert.equal(Object.getPrototypeOf(p), Object.prototype);
  for (const f of [
    (v) => v,
    (v) => ({ a: undefined, b: () => 1, c: Symbol('s'), d: [undefined, () => 1], e: v, '7': 'seven' }),
    (v) => ({ when: new Date(86_400_000), custom: { toJSON: () => [1, 2] } }),
    () => undefined,
    () => new Set([1]),
  ]) {
    const op = mapper(f);
    const batch = { data: new Uint8Array([...encode('k'), ...bytes, ...encode(3)]), entries: [
      { keyLen: 2, valueLen: bytes.length, timestamp: 1n }, { keyLen: 0, valueLen: 1, timestamp: -5n }] };
    const json = hostProcess(op, 0, batch);
    assert.equal(json.path, 'json');
    assert.equal(hex(json.batch.data), hex(op.operator.process(0, batch).data));
  }
  // The identity gives the input bytes back (compact input).
  const id = mapper((v) => v);
  const batch = batchOf([{ key: 'k', value: input, timestamp: 9 }]);
  assert.equal(hex(hostProcess(id, 0, batch).batch.data), hex(batch.data));
});

test('batches JSON cannot carry go the plain path, with the values as lib/msgpack.js has them', () => {
  const U64_MAX = 18446744073709551615n;
  const cases = [
    [U64_MAX, U64_MAX],
    [-(2n ** 63n), -(2n ** 63n)],
    [new Uint8Array([1, 2]), new Uint8Array([1, 2])],
    [new Map([[1, 'one'], ['two', 2]]), new Map([[1, 'one'], ['two', 2]])],
    [{ inner: new Map([[[1], 2]]) }, { inner: new Map([[[1], 2]]) }],
  ];
  for (const [value, decoded] of cases) {
    const batch = batchOf([{ key: value instanceof Map ? 'k' : 7, value, timestamp: 1 }]);
    assert.equal(toJsonDocument(batch), null);
    assert.deepEqual(decodeBatch(batch)[0][1], decoded);
    // The identity through the plain path keeps the bytes.
    assert.equal(hex(hostProcess(mapper((v) => v), 0, batch).batch.data), hex(batch.data));
  }
  const f32 = { data: new Uint8Array([0xca, 0x3f, 0x8c, 0xcc, 0xcd]), entries: [{ keyLen: 0, valueLen: 5, timestamp: 0n }] };
  const nan = { data: new Uint8Array([0xca, 0x7f, 0xc0, 0, 0]), entries: [{ keyLen: 0, valueLen: 5, timestamp: 0n }] };
  assert.notEqual(toJsonDocument(f32), null);
  assert.equal(toJsonDocument(nan), null);
  for (const b of [f32]) {
    const op = mapper((v) => v);
    assert.equal(hex(hostProcess(op, 0, b).batch.data), hex(op.operator.process(0, b).data));
  }
  // Timestamps past 2^53 - 1: BigInt on the plain path, kept exactly.
  const late = { data: encode(1), entries: [{ keyLen: 0, valueLen: 1, timestamp: 2n ** 62n }] };
  assert.equal(toJsonDocument(late), null);
  assert.equal(decodeBatch(late)[0][2], 2n ** 62n);
  assert.equal(mapper((v) => v).operator.process(0, late).entries[0].timestamp, 2n ** 62n);
});

test('output the JSON path cannot carry fails it with a clear error; the plain path encodes it', () => {
  const one = batchOf([{ value: 1, timestamp: 1 }]);
  for (const [value, what] of [[2n ** 60n, /BigInt/], [new Map([[1, 2]]), /a Map/], [new Uint8Array([1]), /Uint8Array/],
    [{ deep: [new Map()] }, /a Map/]]) {
    const op = mapper(() => value);
    assert.throws(() => hostProcess(op, 0, one), (e) => e.tag === 'other' && what.test(e.val) && /JSON batch path/.test(e.val));
    assert.equal(hex(op.operator.process(0, one).data), hex(encode(value)));
  }
  // Outside the JSON path, JSON.stringify behaves as usual.
  assert.equal(JSON.stringify(new Map([[1, 2]])), '{}');
  assert.throws(() => JSON.stringify(1n), TypeError);
  // Malformed output records fail both paths.
  for (const bad of [['k', 1], 'k', [1, 2, 3], ['\u0100', 1, 1], ['k', 1, 1.5], ['k', 1, '1']]) {
    const op = batchOperator((_i, _r, out) => out.push(bad));
    assert.throws(() => op.process(0, one), (e) => e.tag === 'other');
    assert.throws(() => fromJsonDocument(dec.decode(op.encodedBatches.processEncoded(0, enc.encode('[]')))));
  }
});

test('keys: key strings to bytes and values and back', () => {
  assert.equal(encodeKey('w1'), '\xa2w1');
  assert.equal(decodeKey('\xa2w1'), 'w1');
  assert.equal(decodeKey(''), undefined);
  assert.equal(decodeKey(encodeKey(2n ** 64n - 1n)), 2n ** 64n - 1n);
  assert.deepEqual(decodeKey(encodeKey({ a: [1, 'é'] })), { a: [1, 'é'] });
  const bytes = new Uint8Array(300).map((_, i) => i & 0xff);
  assert.deepEqual(keyBytes(keyString(bytes)), bytes);
  assert.equal(keyString(bytes, 10, 12), '\x0a\x0b');
  assert.throws(() => keyBytes('\u0100'), /above U\+00FF/);
  // The record keys of both paths are the same strings (here: every byte value).
  const all = { data: new Uint8Array([...bytes.subarray(0, 256), 0xc0]), entries: [{ keyLen: 256, valueLen: 1, timestamp: 0n }] };
  const doc = JSON.parse(toJsonDocument(all));
  assert.equal(doc[0][0], decodeBatch(all)[0][0]);
  const id = mapper((v) => v);
  assert.equal(hex(hostProcess(id, 0, all).batch.data), hex(all.data));
});
