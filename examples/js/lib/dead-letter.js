// Dead letters: a record the operator will not process, sent with a reason to the job's
// dead-letter destination (the job spec's `dead_letter`), which keeps it with the job, node
// and subtask, the time and the reason. Without a destination the record is dropped and
// counted. The host counts them against the job's `max_dead_letters_per_minute`.
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
import { ByteWriter, write, writeStr } from './msgpack.js';
import { keyBytes } from './keyed-state.js';

/** The side output the host reads dead letters from. */
export const DEAD_LETTER_OUTPUT = 'dead-letter';

const NO_BYTES = new Uint8Array(0);

/**
 * The value of a dead letter: the MessagePack array `[reason, key, value]` (key and value
 * as bin). `key` is the record's key bytes (a Uint8Array) or its key string (the batch API's
 * form, one character per byte; '' or undefined for no key); `value` the record's value
 * bytes (a Uint8Array: on the batch API, where values arrive decoded, `encode(value)` of
 * lib/msgpack.js gives the compact forms the Rust SDK writes).
 */
export function deadLetterValue(key, value, reason) {
  const k = key === undefined || key === null ? NO_BYTES : typeof key === 'string' ? keyBytes(key) : key;
  if (!(k instanceof Uint8Array)) throw new TypeError('deadLetter: the key is a Uint8Array or a key string');
  if (!(value instanceof Uint8Array)) throw new TypeError('deadLetter: the value is its bytes, a Uint8Array');
  const w = new ByteWriter(16 + k.length + value.length);
  w.byte(0x93);
  writeStr(w, String(reason));
  write(w, k);
  write(w, value);
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
