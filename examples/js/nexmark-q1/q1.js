// Nexmark query 1 (currency conversion) in JavaScript: every bid with its price converted
// from dollars to euros (price * 908 / 1000, integer), equivalent to the Rust
// examples/nexmark-q1. Stateless.
//
// Values are bids as maps with named fields (auction, bidder, price, channel, url,
// date_time, extra — written in that order; arrays of the seven fields in that order are
// read too). Each output record keeps the input record's key and timestamp. Written on the
// batch API (lib/records.js): the per-record work is the field checks and the new object.

import { batchOperator } from '../lib/records.js';
import { operatorDefaults } from '../lib/operator.js';

const FIELDS = ['auction', 'bidder', 'price', 'channel', 'url', 'date_time', 'extra'];
const INTS = [true, true, true, false, false, true, false];

/** price * 908 / 1000 in integers (Number while exact, BigInt beyond). */
export function dollarsToEuros(price) {
  if (typeof price === 'number') {
    const scaled = price * 908;
    if (Number.isSafeInteger(scaled)) return (scaled - (scaled % 1000)) / 1000;
    price = BigInt(price);
  }
  const euros = (price * 908n) / 1000n;
  return euros <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(euros) : euros;
}

function invalid(message) {
  return { tag: 'invalid-input', val: `cannot decode MessagePack: ${message}` };
}

/**
 * The slow check of the seven field values `v` (only when the quick one failed): throws
 * the error of the first wrong field, or returns when they are right after all (a u64
 * past 2^53 − 1 is a BigInt).
 */
function checkFields(v) {
  for (let i = 0; i < FIELDS.length; i++) {
    const name = FIELDS[i];
    const x = v[i];
    if (x === undefined) throw invalid(`missing field \`${name}\``);
    if (INTS[i]) {
      const ok = (typeof x === 'number' && Number.isInteger(x) && x >= 0) || (typeof x === 'bigint' && x >= 0n);
      if (!ok) throw invalid(`field \`${name}\`: expected u64, found ${String(x)}`);
    } else if (typeof x !== 'string') {
      throw invalid(`field \`${name}\`: expected a string`);
    }
  }
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export function processBatch(_input, records, out) {
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    const bid = record[1];
    let auction, bidder, price, channel, url, dateTime, extra;
    if (typeof bid !== 'object' || bid === null || bid instanceof Uint8Array) {
      throw invalid('a bid is neither a map nor an array');
    } else if (Array.isArray(bid)) {
      if (bid.length !== 7) throw invalid(`a bid array has ${bid.length} elements, expected 7`);
      [auction, bidder, price, channel, url, dateTime, extra] = bid;
    } else if (bid instanceof Map) {
      // A map with a key that is not a string: read it by name as well.
      auction = bid.get('auction'); bidder = bid.get('bidder'); price = bid.get('price');
      channel = bid.get('channel'); url = bid.get('url'); dateTime = bid.get('date_time');
      extra = bid.get('extra');
    } else {
      auction = bid.auction; bidder = bid.bidder; price = bid.price; channel = bid.channel;
      url = bid.url; dateTime = bid.date_time; extra = bid.extra;
    }
    // The quick check, written out (a call per field costs more than the test in the
    // interpreter): non-negative integer Numbers and strings; anything else, the careful one.
    if (!(typeof auction === 'number' && auction >= 0 && auction % 1 === 0
      && typeof bidder === 'number' && bidder >= 0 && bidder % 1 === 0
      && typeof price === 'number' && price >= 0 && price % 1 === 0
      && typeof dateTime === 'number' && dateTime >= 0 && dateTime % 1 === 0
      && typeof channel === 'string' && typeof url === 'string' && typeof extra === 'string')) {
      checkFields([auction, bidder, price, channel, url, dateTime, extra]);
    }
    const scaled = typeof price === 'number' ? price * 908 : Infinity; // BigInt: the slow way
    const euros = scaled <= MAX_SAFE ? (scaled - (scaled % 1000)) / 1000 : dollarsToEuros(price);
    out.push([record[0], { auction, bidder, price: euros, channel, url, date_time: dateTime, extra }, record[2]]);
  }
}

const batch = batchOperator(processBatch);

export const encodedBatches = batch.encodedBatches;

export const operator = {
  ...operatorDefaults(null, { stateVersion: 0, name: 'nexmark-q1' }),

  describe() {
    return { name: 'nexmark-q1-js', stateVersion: 0, migratesFrom: [] };
  },

  process: batch.process,
};
