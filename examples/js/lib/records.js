// The batch-level operator API: an operator writes one function,
//
//   processBatch(input, records, out)
//
// where `records` is an array of `[key, value, timestamp]` (one per record, in batch order)
// and `out` an array to push `[key, value, timestamp]` records to emit onto. Keys stay
// encoded: a key is the string with one character (U+0000 to U+00FF) per byte of the
// record's MessagePack key, '' for no key — the same string `KeyedState` is keyed by.
// Values are decoded as JSON.parse gives them: null, booleans, numbers, strings, arrays and
// plain objects. Timestamps are integers (Numbers).
//
// `batchOperator(processBatch)` makes the two ways the host calls it (wit/encoded.wit):
// - `encodedBatches.processEncoded`: the host transcodes the batch to one JSON document
//   `[[key, value, ts], ...]`; one JSON.parse in, one JSON.stringify out, per batch;
// - `process` (the plain `operator.process`), for the batches JSON cannot carry exactly
//   and for hosts without the fast path: decodes every value with lib/msgpack.js into the
//   same shape (values JSON lacks as lib/msgpack.js gives them: BigInt past 2^53 − 1,
//   Uint8Array for bin, Map for a map with a non-string key; a timestamp past 2^53 − 1 is
//   a BigInt), and encodes the output as JSON.stringify and then the host would.
// Both paths give the same output bytes for the same records. Output the JSON path cannot
// carry exactly (a BigInt, a Uint8Array or a Map) fails its call with an error saying so;
// the plain path encodes it.

import { ByteWriter, Reader, decode, encode, writeJsonLike, MsgpackError } from './msgpack.js';
import { toWitError } from './batch.js';
import { keyString, keyBytes } from './keyed-state.js';

export { keyString, keyBytes };

/** The key string of `value` encoded as MessagePack (what `decodeKey` reads back). */
export function encodeKey(value) {
  return keyString(encode(value));
}

/** The value of a key string (decoded as record values are), or undefined for ''. */
export function decodeKey(key) {
  if (key === '') return undefined;
  const bytes = keyBytes(key);
  return decode(bytes, 0, bytes.length, { json: true });
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_S64 = -(2n ** 63n);
const MAX_S64 = 2n ** 63n - 1n;

function invalidInput(message) {
  return { tag: 'invalid-input', val: message };
}

function other(message) {
  return { tag: 'other', val: message };
}

/** The records of a WIT batch, values decoded (the plain path). */
export function decodeBatch(batch) {
  const data = batch.data;
  const entries = batch.entries;
  const n = entries.length;
  const records = new Array(n);
  const reader = new Reader(data, 0, data.length, { json: true });
  let offset = 0;
  for (let i = 0; i < n; i++) {
    const e = entries[i];
    const keyEnd = offset + e.keyLen;
    const valueEnd = keyEnd + e.valueLen;
    if (valueEnd > data.length) {
      throw invalidInput(`record ${i} runs past the end of the batch data (${data.length} bytes)`);
    }
    let value;
    try {
      reader.pos = keyEnd;
      reader.end = valueEnd;
      value = reader.value();
      if (reader.pos !== valueEnd) throw new MsgpackError(`${valueEnd - reader.pos} trailing bytes after a MessagePack value`);
    } catch (err) {
      throw invalidInput(`cannot decode MessagePack: ${err.message}`);
    }
    const t = e.timestamp;
    records[i] = [keyString(data, offset, keyEnd), value, t >= MIN_SAFE && t <= MAX_SAFE ? Number(t) : t];
    offset = valueEnd;
  }
  return records;
}

/** The WIT batch of output records `out` (the plain path). */
export function encodeRecords(out) {
  const w = new ByteWriter(out.length * 64 + 64);
  const n = out.length;
  const entries = new Array(n);
  for (let i = 0; i < n; i++) {
    const record = out[i];
    if (!Array.isArray(record) || record.length !== 3) {
      throw other(`output record ${i} is not an array [key, value, timestamp]`);
    }
    const key = record[0];
    if (typeof key !== 'string') throw other(`output record ${i}: the key is not a key string ('' for none)`);
    const start = w.len;
    w.reserve(key.length);
    for (let j = 0; j < key.length; j++) {
      const c = key.charCodeAt(j);
      if (c > 0xff) throw other(`output record ${i}: the key string has a character above U+00FF`);
      w.buf[w.len++] = c;
    }
    const keyEnd = w.len;
    writeJsonLike(w, record[1]);
    entries[i] = { keyLen: keyEnd - start, valueLen: w.len - keyEnd, timestamp: toTimestamp(record[2], i) };
  }
  return { data: w.toBytes(), entries };
}

function toTimestamp(t, i) {
  if (typeof t === 'number' && Number.isSafeInteger(t)) return BigInt(t);
  if (typeof t === 'bigint' && t >= MIN_S64 && t <= MAX_S64) return t;
  throw other(`output record ${i}: the timestamp ${String(t)} is not a 64-bit integer`);
}

// While the JSON path serialises its output, the values JSON cannot carry exactly fail the
// call (JSON.stringify would write a Map or a Uint8Array as an object, silently); at any
// other time they serialise as JSON.stringify always does.
let strictJson = false;
for (const [proto, what] of [
  [BigInt.prototype, 'an integer beyond ±(2^53 − 1) (a BigInt)'],
  [Map.prototype, 'a Map'],
  [Uint8Array.prototype, 'bytes (a Uint8Array)'],
]) {
  Object.defineProperty(proto, 'toJSON', {
    configurable: true,
    writable: true,
    value() {
      if (strictJson) {
        throw other(`an output value holds ${what}, which the JSON batch path cannot carry exactly`);
      }
      return this;
    },
  });
}

const utf8Decoder = new TextDecoder();
const utf8Encoder = new TextEncoder();

/**
 * The exports of a batch operator: `process` (for the `operator` object) and
 * `encodedBatches` (to export as is).
 */
export function batchOperator(processBatch) {
  return {
    process(input, batch) {
      try {
        const out = [];
        processBatch(input, decodeBatch(batch), out);
        return encodeRecords(out);
      } catch (e) {
        throw toWitError(e);
      }
    },
    encodedBatches: {
      wantedFormat() {
        return 'json';
      },
      processEncoded(input, bytes) {
        try {
          let records;
          try {
            records = JSON.parse(utf8Decoder.decode(bytes));
          } catch (e) {
            throw invalidInput(`the batch is not a JSON document: ${e.message}`);
          }
          if (!Array.isArray(records)) throw invalidInput('the batch is not a JSON array of records');
          const out = [];
          processBatch(input, records, out);
          let text;
          strictJson = true;
          try {
            text = JSON.stringify(out);
          } finally {
            strictJson = false;
          }
          return utf8Encoder.encode(text);
        } catch (e) {
          throw toWitError(e);
        }
      },
      // State documents (wit/encoded.wit) are not used yet: snapshots and restores go
      // through the operator's own `snapshot` and `restore` (none = the plain call).
      snapshotEncoded() {
        return undefined;
      },
      planRestore() {
        return undefined;
      },
      restoreEncoded() {
        throw toWitError(other('restore-encoded was called without a restore plan'));
      },
    },
  };
}
