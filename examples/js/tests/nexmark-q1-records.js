// Test fixture (built with --with-test-fixtures as nexmark-q1-records.wasm): Nexmark q1
// written per record on the plain `operator.process` API, decoding and encoding every
// record's MessagePack itself, as nexmark-q1/q1.js was before the batch API. It exports no
// `encoded-batches`, so the host always calls `process`; a test checks that it and the
// batch q1 (nexmark-q1/q1.js) give the same output bytes. Stateless.
//
// Values are bids as MessagePack maps with named fields (auction, bidder, price, channel,
// url, date_time, extra — written in that order; arrays of the seven fields in that order
// are read too). Each output record keeps the input record's key bytes and timestamp.

import { ByteWriter, Reader, write, writeStr, MsgpackError } from '../lib/msgpack.js';
import { forEachRecord, toWitError } from '../lib/batch.js';
import { operatorDefaults } from '../lib/operator.js';

const FIELDS = ['auction', 'bidder', 'price', 'channel', 'url', 'date_time', 'extra'];
const INTS = new Set(['auction', 'bidder', 'price', 'date_time']);

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

function checkField(name, v) {
  if (v === undefined) throw new MsgpackError(`missing field \`${name}\``);
  if (INTS.has(name)) {
    const ok = (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n);
    if (!ok) throw new MsgpackError(`field \`${name}\`: expected u64, found ${String(v)}`);
  } else if (typeof v !== 'string') {
    throw new MsgpackError(`field \`${name}\`: expected a string`);
  }
  return v;
}

/** Decodes a bid from data[start, end) into an array of the seven field values. */
function readBid(data, start, end) {
  const r = new Reader(data, start, end, { maps: true });
  const v = r.value();
  if (r.pos !== end) throw new MsgpackError('trailing bytes after the bid');
  if (v instanceof Map) return FIELDS.map((name) => checkField(name, v.get(name)));
  if (Array.isArray(v)) {
    if (v.length !== FIELDS.length) throw new MsgpackError(`a bid array has ${v.length} elements, expected 7`);
    return FIELDS.map((name, i) => checkField(name, v[i]));
  }
  throw new MsgpackError('a bid is neither a map nor an array');
}

export const operator = {
  ...operatorDefaults(null, { stateVersion: 0, name: 'nexmark-q1' }),

  describe() {
    return { name: 'nexmark-q1-records-js', stateVersion: 0, migratesFrom: [] };
  },

  process(_input, batch) {
    try {
      const out = new ByteWriter(batch.data.length + 64);
      const entries = [];
      forEachRecord(batch, (data, keyStart, keyEnd, valueEnd, timestamp) => {
        let bid;
        try {
          bid = readBid(data, keyEnd, valueEnd);
        } catch (e) {
          throw { tag: 'invalid-input', val: `cannot decode MessagePack: ${e.message}` };
        }
        bid[2] = dollarsToEuros(bid[2]);
        const start = out.len;
        out.bytes(data.subarray(keyStart, keyEnd));
        const valueStart = out.len;
        out.byte(0x80 | FIELDS.length);
        for (let i = 0; i < FIELDS.length; i++) {
          writeStr(out, FIELDS[i]);
          write(out, bid[i]);
        }
        entries.push({ keyLen: valueStart - start, valueLen: out.len - valueStart, timestamp });
      });
      return { data: out.toBytes(), entries };
    } catch (e) {
      throw toWitError(e);
    }
  },
};
