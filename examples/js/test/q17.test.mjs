// Unit tests of the Nexmark q17 operator (auction statistics per auction), under Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { encode, decode, write, ByteWriter } from '../lib/msgpack.js';
import { operator as q17, readBid, rank } from '../nexmark-q17/q17.js';
import { hex, batchOf, recordsOf, changesOf } from './helpers.mjs';

const U64_MAX = 18446744073709551615n;
/** A fresh q17 instance (its own module instance, so its own state). */
let instances = 0;
const fresh = async () => (await import(`../nexmark-q17/q17.js?instance=${++instances}`)).operator;

const bid = (auction, price, ts, extra = {}) => ({
  key: auction,
  value: { auction, bidder: 9, price, channel: 'web', url: 'u', date_time: ts, extra: '', ...extra },
  timestamp: ts,
});
const row = (auction, total, r1, r2, r3, min, max, avg, sum) => ({
  auction, total_bids: total, rank1_bids: r1, rank2_bids: r2, rank3_bids: r3,
  min_price: min, max_price: max, avg_price: avg, sum_price: sum,
});

test('q17 emits running statistics per auction, keyed and timed like the bid', async () => {
  const op = await fresh();
  op.open({});
  const out = op.process(0, batchOf([bid(1, 500, 10), bid(2, 20_000, 11), bid(1, 2_000_000, 12)]));
  assert.deepEqual(recordsOf(out), [
    { key: 1, value: row(1, 1, 1, 0, 0, 500, 500, 500, 500), timestamp: 10 },
    { key: 2, value: row(2, 1, 0, 1, 0, 20_000, 20_000, 20_000, 20_000), timestamp: 11 },
    { key: 1, value: row(1, 2, 1, 0, 1, 500, 2_000_000, 1_000_250, 2_000_500), timestamp: 12 },
  ]);
  // Byte-exact: key bytes, then a fixmap of 9 in the Rust struct's field order.
  const first = recordsOf(out)[0];
  assert.equal(hex(out.data.subarray(0, 1 + encode(first.value).length)), hex(encode(1)) + hex(encode(first.value)));
  assert.equal(out.data[1], 0x89);
  assert.equal(op.process(0, batchOf([])).entries.length, 0);
});

test('q17 ranks: < 10 000, < 1 000 000, the rest', () => {
  assert.deepEqual([0, 9_999, 10_000, 999_999, 1_000_000, U64_MAX].map(rank), [1, 1, 2, 2, 3, 3]);
});

test('q17 keeps the key bytes as they came (state key and output key)', async () => {
  const op = await fresh();
  // auction 5 as a non-shortest uint8 (0xcc 0x05): a different key than 0x05, kept as is.
  const value = encode(bid(5, 100, 1).value);
  const w = new ByteWriter();
  w.bytes(new Uint8Array([0xcc, 0x05]));
  w.bytes(value);
  w.bytes(new Uint8Array([0x05]));
  w.bytes(value);
  const out = op.process(0, { data: w.toBytes(), entries: [
    { keyLen: 2, valueLen: value.length, timestamp: 1n }, { keyLen: 1, valueLen: value.length, timestamp: 2n }] });
  assert.deepEqual(out.data.subarray(0, 2), new Uint8Array([0xcc, 0x05]));
  assert.deepEqual(recordsOf(out).map((r) => r.value.total_bids), [1, 1]);
  const keys = [];
  const delta = op.snapshot(1n, false);
  let off = 0;
  for (const e of delta.entries) { keys.push(hex(delta.data.subarray(off, off + e.keyLen))); off += e.keyLen + e.valueLen; }
  assert.deepEqual(keys.sort(), ['05', 'cc05']);
});

test('q17 sums saturate at 2^64 - 1; the average is the floor', async () => {
  const op = await fresh();
  const out = op.process(0, batchOf([bid(7, U64_MAX, 1), bid(7, 1, 2), bid(8, 10, 3), bid(8, 5, 4)]));
  const rows = recordsOf(out).map((r) => r.value);
  assert.deepEqual(rows[0], row(7, 1, 0, 0, 1, U64_MAX, U64_MAX, U64_MAX, U64_MAX));
  assert.deepEqual(rows[1], row(7, 2, 1, 0, 1, 1, U64_MAX, U64_MAX / 2n, U64_MAX));
  assert.deepEqual(rows[3], row(8, 2, 2, 0, 0, 5, 10, 7, 15));
  assert.deepEqual(changesOf(op.snapshot(1n, true)).sort(), [
    ['stats', 'put', 7, [2, 1, 0, 1, 1, U64_MAX, U64_MAX]],
    ['stats', 'put', 8, [2, 2, 0, 0, 5, 10, 15]],
  ]);
});

test('q17 snapshots: only the changed auctions, or every one when full', async () => {
  const op = await fresh();
  op.process(0, batchOf([bid(1, 100, 1), bid(2, 20_000, 2), bid(1, 300, 3)]));
  const first = op.snapshot(1n, false);
  assert.deepEqual(first.names, ['stats']);
  assert.deepEqual(changesOf(first), [
    ['stats', 'put', 1, [2, 2, 0, 0, 100, 300, 400]],
    ['stats', 'put', 2, [1, 0, 1, 0, 20_000, 20_000, 20_000]],
  ]);
  // The state value is a MessagePack array of 7 compact uints.
  assert.equal(hex(first.data.subarray(1, 1 + first.entries[0].valueLen)), '9702020000' + '64' + 'cd012c' + 'cd0190');
  assert.deepEqual(changesOf(op.snapshot(2n, false)), []);
  op.process(0, batchOf([bid(2, 5, 4)]));
  assert.deepEqual(changesOf(op.snapshot(3n, false)), [['stats', 'put', 2, [2, 1, 1, 0, 5, 20_000, 20_005]]]);
  assert.deepEqual(changesOf(op.snapshot(4n, true)).sort(), [
    ['stats', 'put', 1, [2, 2, 0, 0, 100, 300, 400]],
    ['stats', 'put', 2, [2, 1, 1, 0, 5, 20_000, 20_005]],
  ]);
  assert.deepEqual(changesOf(op.snapshot(5n, false)), []);
});

test('q17 restores its state and goes on from it', async () => {
  const a = await fresh();
  a.process(0, batchOf([bid(1, 100, 1), bid(2, 2_000_000, 2)]));
  const saved = a.snapshot(1n, true);
  const b = await fresh();
  b.restore(0, saved);
  b.open({ restored: true });
  assert.deepEqual(changesOf(b.snapshot(1n, false)), [], 'restored entries are held by the host');
  assert.deepEqual(recordsOf(b.process(0, batchOf([bid(1, 50_000, 3)]))).map((r) => r.value),
    [row(1, 2, 1, 1, 0, 100, 50_000, 25_050, 50_100)]);
  assert.deepEqual(changesOf(b.snapshot(2n, false)), [['stats', 'put', 1, [2, 1, 1, 0, 100, 50_000, 50_100]]]);

  const c = await fresh();
  assert.throws(() => c.restore(1, saved), (e) => e.tag === 'invalid-state' && /version 1/.test(e.val));
  const bad = (value) => {
    const k = encode(1);
    const v = encode(value);
    return { names: ['stats'], data: new Uint8Array([...k, ...v]), entries: [{ state: 0, kind: 'put', keyLen: k.length, valueLen: v.length }] };
  };
  assert.throws(() => c.restore(0, bad([1, 2, 3])), (e) => e.tag === 'invalid-state' && /7 unsigned/.test(e.val));
  assert.throws(() => c.restore(0, bad([1, 1, 0, 0, -5, 5, 5])), (e) => e.tag === 'invalid-state');
  assert.throws(() => c.restore(0, { ...bad([1, 1, 0, 0, 5, 5, 5]), names: ['counts'] }), (e) => e.tag === 'invalid-state');
});

/** A MessagePack map of `pairs` ([name, value] or [name, raw bytes wrapped in { raw }]). */
function mapBytes(pairs) {
  const w = new ByteWriter();
  w.byte(0x80 | pairs.length);
  for (const [name, value] of pairs) {
    write(w, name);
    if (value && value.raw) w.bytes(value.raw); else write(w, value);
  }
  return w.toBytes();
}

test('q17 reads auction and price from a map and skips every other field', () => {
  const f64 = { raw: new Uint8Array([0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]) };
  const f32 = { raw: new Uint8Array([0xca, 0x3f, 0xc0, 0, 0]) };
  const bytes = mapBytes([['extra', [1, [2, 'x'], { k: new Uint8Array(300) }]], ['price', 3], ['n', null],
    ['f', f64], ['g', f32], ['t', true], ['neg', -70000], ['big', U64_MAX], ['s', 'y'.repeat(300)],
    ['auction', 4]]);
  const value = (b) => decode(b, 0, b.length, { json: true });
  assert.deepEqual(readBid(value(bytes)), { auction: 4, price: 3 });
  // A map keyed by integers is not a bid with named fields.
  const ints = encode(new Map([[0, 4], [1, 3]]));
  assert.throws(() => readBid(value(ints)), (e) => /missing field `auction`/.test(e.val));
  // A map with some keys that are not strings is read by name all the same.
  assert.deepEqual(readBid(value(encode(new Map([[0, 4], ['auction', 1], ['price', 2]])))), { auction: 1, price: 2 });
  // A repeated field: the last value counts (as JSON.parse has it, on either path).
  const dup = mapBytes([['auction', 1], ['price', 1], ['auction', 2]]);
  assert.deepEqual(readBid(value(dup)), { auction: 2, price: 1 });
  assert.deepEqual(readBid({ auction: U64_MAX, price: 1 }), { auction: U64_MAX, price: 1 });
  assert.throws(() => readBid({ auction: U64_MAX + 1n, price: 1 }), (e) => /`auction`: expected u64/.test(e.val));
  assert.throws(() => readBid({ auction: 1.5, price: 1 }), (e) => /`auction`: expected u64/.test(e.val));
  assert.throws(() => readBid(new Uint8Array(3)), (e) => /not a map/.test(e.val));
});

test('q17 fails the batch on a value that is not a bid, or an unkeyed record', async () => {
  const op = await fresh();
  const invalid = (records, re) => assert.throws(() => op.process(0, batchOf(records)),
    (e) => e.tag === 'invalid-input' && re.test(e.val));
  invalid([{ key: 1, value: [1, 2, 3, 4, 5, 6, 7], timestamp: 0 }], /not a map/);
  invalid([{ key: 1, value: 'bid', timestamp: 0 }], /not a map/);
  invalid([{ key: 1, value: { auction: 1 }, timestamp: 0 }], /missing field `price`/);
  invalid([{ key: 1, value: { price: 1 }, timestamp: 0 }], /missing field `auction`/);
  invalid([{ key: 1, value: { auction: 1, price: -1 }, timestamp: 0 }], /`price`: expected u64/);
  invalid([{ key: 1, value: { auction: '1', price: 1 }, timestamp: 0 }], /`auction`: expected u64/);
  invalid([{ value: { auction: 1, price: 1 }, timestamp: 0 }], /keyed by auction/);
  const truncated = batchOf([bid(1, 1, 0)]);
  truncated.entries[0].valueLen -= 1;
  truncated.data = truncated.data.subarray(0, truncated.data.length - 1);
  assert.throws(() => op.process(0, truncated), (e) => e.tag === 'invalid-input');
});
