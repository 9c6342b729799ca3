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
// Written on the batch API (lib/records.js): the record's key string is the state key.

import { KeyedState, States } from '../lib/keyed-state.js';
import { write, decode, MsgpackError } from '../lib/msgpack.js';
import { batchOperator } from '../lib/records.js';
import { operatorDefaults } from '../lib/operator.js';

const STATE_VERSION = 0;
const U64_MAX = 0xffffffffffffffffn;

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

function invalid(message) {
  return { tag: 'invalid-input', val: `cannot decode MessagePack: ${message}` };
}

/** The slow check of a bid field's value (the quick one failed): throws unless a u64. */
function checkU64(field, v) {
  if (v === undefined) throw invalid(`missing field \`${field}\``);
  if (!isU64(v)) throw invalid(`field \`${field}\`: expected u64, found ${String(v)}`);
}

const isU = (x) => typeof x === 'number' && x >= 0 && x % 1 === 0;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * The `auction` and `price` of a bid value (a map with named fields; other fields are not
 * looked at). Throws `invalid-input` for anything else.
 */
export function readBid(bid) {
  if (typeof bid !== 'object' || bid === null || Array.isArray(bid) || bid instanceof Uint8Array) {
    throw invalid('a bid is not a map with named fields');
  }
  // A Map has a key that is not a string: read the named fields all the same.
  const map = bid instanceof Map;
  const auction = map ? bid.get('auction') : bid.auction;
  const price = map ? bid.get('price') : bid.price;
  if (!isU(auction)) checkU64('auction', auction);
  if (!isU(price)) checkU64('price', price);
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

export function processBatch(_input, records, out) {
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    const bid = record[1];
    if (typeof bid !== 'object' || bid === null) readBid(bid); // throws
    let auction = bid.auction;
    let price = bid.price;
    // The careful reading (and its errors) when the quick one does not find two numbers.
    if (!(typeof auction === 'number' && auction >= 0 && auction % 1 === 0
      && typeof price === 'number' && price >= 0 && price % 1 === 0)) ({ auction, price } = readBid(bid));
    const key = record[0];
    if (key === '') {
      throw { tag: 'invalid-input', val: 'q17 expects bids keyed by auction (source config "key": "auction")' };
    }
    let s = stats.modify(key);
    if (s === undefined) {
      s = [0, 0, 0, 0, price, price, 0];
      stats.set(key, s);
    }
    // Numbers while the sums stay below 2^53 (written out: calls cost in the interpreter);
    // else the BigInt-aware addBid.
    const total = s[0];
    const sum = s[6];
    const r = price < 10_000 ? 1 : price < 1_000_000 ? 2 : 3;
    const count = s[r];
    let avg;
    if (typeof price === 'number' && typeof total === 'number' && typeof sum === 'number' && typeof count === 'number'
      && total < MAX_SAFE && count < MAX_SAFE && sum + price <= MAX_SAFE) {
      s[0] = total + 1;
      s[r] = count + 1;
      if (price < s[4]) s[4] = price;
      if (price > s[5]) s[5] = price;
      s[6] = sum + price;
      avg = (s[6] - (s[6] % s[0])) / s[0];
    } else {
      addBid(s, price);
      avg = divide(s[6], s[0]);
    }
    out.push([key, {
      auction,
      total_bids: s[0],
      rank1_bids: s[1],
      rank2_bids: s[2],
      rank3_bids: s[3],
      min_price: s[4],
      max_price: s[5],
      avg_price: avg,
      sum_price: s[6],
    }, record[2]]);
  }
}

const batch = batchOperator(processBatch);

export const encodedBatches = batch.encodedBatches;

export const operator = {
  ...operatorDefaults(states, { stateVersion: STATE_VERSION }),

  describe() {
    return { name: 'nexmark-q17-js', stateVersion: STATE_VERSION, migratesFrom: [] };
  },

  process: batch.process,
};

// For tests under Node (not part of the component's interface).
export const _internal = { stats, states };
