// Dead letters: a record the operator will not process, sent with a reason to the job's
// dead-letter destination (the job spec's `dead_letter`), which keeps it with the job, node
// and subtask, the time and the reason, and counts it against the job's
// `max_dead_letters_per_minute`. A job without a destination drops it as a side-output
// record no edge carries (metric `side_output_dropped`), outside that limit.
//
//   import { deadLetter } from '../lib/dead-letter.js';
//   deadLetter(key, value, timestamp, `price ${price} out of range`);
//
// On the wire (what the host unwraps, as the Rust SDK's `weir_guest::dead_letter::send_raw`
// writes it): side output `dead-letter`, empty key, value the MessagePack array
// `[reason, key, value]`, the reason a str and the record's key and value bytes as bin.
//
// The module imports the world's `side-output` interface (both worlds of wit/ have it), so an
// operator that imports this module imports that interface. Under Node (the unit tests) the
// `weir:` specifier needs a stand-in: see test/wit-stubs.mjs.

import { emit } from 'weir:operator/side-output@0.2.0';
import { ByteWriter, writeStr } from './msgpack.js';
import { keyBytes } from './keyed-state.js';

/** The side output the host reads dead letters from. */
export const DEAD_LETTER_OUTPUT = 'dead-letter';

const NO_BYTES = new Uint8Array(0);

/**
 * `bytes` as a Uint8Array of this module's realm. Inside a componentize-js component the
 * host's byte lists (a batch's `data`, and what `slice` or `subarray` make of it) are
 * Uint8Arrays of another realm: `instanceof Uint8Array` is false for them (checked with
 * componentize-js 0.23), so they are taken as any ArrayBuffer view.
 */
function ownBytes(bytes, what) {
  if (bytes instanceof Uint8Array) return bytes;
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError(`deadLetter: the ${what}`);
}

function writeBin(w, b) {
  const n = b.length;
  if (n < 0x100) { w.byte(0xc4); w.byte(n); }
  else if (n < 0x10000) { w.byte(0xc5); w.u16(n); }
  else { w.byte(0xc6); w.u32(n); }
  w.bytes(b);
}

/**
 * The value of a dead letter: the MessagePack array `[reason, key, value]` (key and value
 * as bin). `key` is the record's key bytes (a Uint8Array, or any ArrayBuffer view) or its key
 * string (the batch API's form, one character per byte; '' or undefined for no key); `value`
 * the record's value bytes (a Uint8Array or any ArrayBuffer view: on the batch API, where
 * values arrive decoded, `encode(value)` of lib/msgpack.js gives the compact forms the Rust
 * SDK writes).
 */
export function deadLetterValue(key, value, reason) {
  const k = key === undefined || key === null ? NO_BYTES
    : typeof key === 'string' ? keyBytes(key) : ownBytes(key, 'key is its bytes or a key string');
  const v = ownBytes(value, 'value is its bytes (a Uint8Array)');
  const w = new ByteWriter(16 + k.length + v.length);
  w.byte(0x93);
  writeStr(w, String(reason));
  writeBin(w, k);
  writeBin(w, v);
  return w.toBytes();
}

/**
 * Sends a record to the dead letters with `reason` (the host keeps its first 256
 * characters): `key` and `value` as `deadLetterValue` takes them, `timestamp` the record's
 * event time (a Number or a BigInt).
 */
export function deadLetter(key, value, timestamp, reason) {
  emit(DEAD_LETTER_OUTPUT, NO_BYTES, deadLetterValue(key, value, reason), BigInt(timestamp));
}
