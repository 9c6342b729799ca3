// Nexmark query 17 (auction statistics) in JavaScript, grouped by auction: for every bid,
// the running statistics of its auction. Keyed and stateful; equivalent to the Rust
// examples/nexmark-q17 (same state entries, same output bytes).
//
// - Input: bids keyed by their auction id (MessagePack uint; the Nexmark source does this
//   with `"key": "auction"`), value = the bid as a MessagePack map with named fields (only
//   `auction` and `price` are read, both unsigned ints; other fields are skipped).
// - State "stats" (schema version 0): key = the record key bytes as they came, value =
//   MessagePack array [total_bids, rank1_bids, rank2_bids, rank3_bids, min_price,
//   max_price, sum_price]. Ranks: price < 10 000, < 1 000 000, the rest. The sum saturates
//   at 2^64 - 1.
// - Output: for every bid, one record with the bid's key bytes and timestamp whose value is
//   the map {auction, total_bids, rank1_bids, rank2_bids, rank3_bids, min_price, max_price,
//   avg_price, sum_price} (in that order; avg_price = sum_price / total_bids, rounded down).
//
// Numbers are Numbers while exact and BigInt beyond 2^53 (the codec decodes them so).

import { KeyedState, States, keyString } from '../lib/keyed-state.js';
import { ByteWriter, Reader, write, encode, decode, MsgpackError } from '../lib/msgpack.js';
import { forEachRecord, toWitError } from '../lib/batch.js';
import { operatorDefaults } from '../lib/operator.js';

const STATE_VERSION = 0;
const U64_MAX = 0xffffffffffffffffn;
const OUTPUT_FIELDS = ['auction', 'total_bids', 'rank1_bids', 'rank2_bids', 'rank3_bids',
  'min_price', 'max_price', 'avg_price', 'sum_price'];
/** The encoded names of the output fields (fixstr), written before each value. */
const FIELD_BYTES = OUTPUT_FIELDS.map((name) => encode(name));
const AUCTION = new TextEncoder().encode('auction');
const PRICE = new TextEncoder().encode('price');

const isU64 = (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n && v <= U64_MAX);

/** Reads a stats entry and checks its layout (an error becomes `invalid-state`). */
function readStats(bytes) {
  const v = decode(bytes);
  if (!Array.isArray(v) || v.length !== 7 || !v.every(isU64)) {
    throw new MsgpackError('a "stats" value is not an array of 7 unsigned integers');
  }
  return v;
}

const stats = new KeyedState({ write: (w, value) => write(w, value), read: readStats });
const states = new States({ stats });

/** Whether data[start, end) holds exactly the bytes of `name`. */
function bytesEqual(data, start, end, name) {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (data[start + i] !== name[i]) return false;
  return true;
}

/** Reads the `auction` and `price` of the bid at data[start, end) (a map with named fields). */
export function readBid(data, start, end) {
  const r = new Reader(data, start, end);
  const n = r.mapLength();
  if (n < 0) throw new MsgpackError('a bid is not a map with named fields');
  let auction;
  let price;
  for (let i = 0; i < n; i++) {
    const name = r.strBytes();
    let field = null;
    if (name !== null) {
      if (bytesEqual(data, name[0], name[1], AUCTION)) field = 'auction';
      else if (bytesEqual(data, name[0], name[1], PRICE)) field = 'price';
    } else {
      r.skip();
    }
    if (field === null) { r.skip(); continue; }
    const v = r.value();
    if (!isU64(v)) throw new MsgpackError(`field \`${field}\`: expected u64, found ${String(v)}`);
    if (field === 'auction') {
      if (auction !== undefined) throw new MsgpackError('duplicate field `auction`');
      auction = v;
    } else {
      if (price !== undefined) throw new MsgpackError('duplicate field `price`');
      price = v;
    }
  }
  if (r.pos !== end) throw new MsgpackError('trailing bytes after the bid');
  if (auction === undefined) throw new MsgpackError('missing field `auction`');
  if (price === undefined) throw new MsgpackError('missing field `price`');
  return { auction, price };
}

/** The index in the stats array of the counter of `price`'s rank. */
export function rank(price) {
  return price < 10_000 ? 1 : price < 1_000_000 ? 2 : 3;
}

/** a + b for u64 values, saturating at 2^64 - 1 (Number while exact, BigInt beyond). */
export function saturatingAdd(a, b) {
  if (typeof a === 'number' && typeof b === 'number') {
    const sum = a + b;
    if (Number.isSafeInteger(sum)) return sum;
  }
  const sum = BigInt(a) + BigInt(b);
  return sum > U64_MAX ? U64_MAX : sum <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(sum) : sum;
}

/** a / b rounded down, for u64 values (b > 0). */
function divide(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return (a - (a % b)) / b;
  const q = BigInt(a) / BigInt(b);
  return q <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(q) : q;
}

/** Adds one bid's price to the stats array `s` (in place). */
export function addBid(s, price) {
  s[0] = saturatingAdd(s[0], 1);
  const r = rank(price);
  s[r] = saturatingAdd(s[r], 1);
  if (price < s[4]) s[4] = price;
  if (price > s[5]) s[5] = price;
  s[6] = saturatingAdd(s[6], price);
}

export const operator = {
  ...operatorDefaults(states, { stateVersion: STATE_VERSION }),

  describe() {
    return { name: 'nexmark-q17-js', stateVersion: STATE_VERSION, migratesFrom: [] };
  },

  process(_input, batch) {
    try {
      const out = new ByteWriter(batch.entries.length * 64 + 64);
      const entries = [];
      forEachRecord(batch, (data, keyStart, keyEnd, valueEnd, timestamp) => {
        let bid;
        try {
          bid = readBid(data, keyEnd, valueEnd);
        } catch (e) {
          throw { tag: 'invalid-input', val: `cannot decode MessagePack: ${e.message}` };
        }
        if (keyStart === keyEnd) {
          throw { tag: 'invalid-input', val: 'q17 expects bids keyed by auction (source config "key": "auction")' };
        }
        const key = keyString(data, keyStart, keyEnd);
        let s = stats.get(key);
        if (s === undefined) {
          s = [0, 0, 0, 0, bid.price, bid.price, 0];
          addBid(s, bid.price);
          stats.set(key, s);
        } else {
          addBid(s, bid.price);
          stats.touch(key);
        }
        const start = out.len;
        out.bytes(data.subarray(keyStart, keyEnd));
        const valueStart = out.len;
        out.byte(0x80 | OUTPUT_FIELDS.length);
        const row = [bid.auction, s[0], s[1], s[2], s[3], s[4], s[5], divide(s[6], s[0]), s[6]];
        for (let i = 0; i < row.length; i++) {
          out.bytes(FIELD_BYTES[i]);
          write(out, row[i]);
        }
        entries.push({ keyLen: valueStart - start, valueLen: out.len - valueStart, timestamp });
      });
      return { data: out.toBytes(), entries };
    } catch (e) {
      throw toWitError(e);
    }
  },
};

// For tests under Node (not part of the component's interface).
export const _internal = { stats, states };
