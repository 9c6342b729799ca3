// Word count in JavaScript: a keyed, stateful Weir operator, equivalent to the Rust
// examples/wordcount.
//
// Input: records keyed by a word (MessagePack str) whose value is an increment (MessagePack
// uint), as the tokenizer emits them. State: the running count of every word, in the keyed
// state "counts" (key = the word's MessagePack bytes, value = MessagePack uint), schema
// version 0 — the same entries as the Rust operator writes. Output: for each input batch,
// one record per distinct word of the batch, in first-seen order: key = the word, value =
// its new total, timestamp = the latest timestamp of the word's records in the batch.

// Written on the batch API (lib/records.js): a record's key string is its state key.

import { KeyedState, States, keyString, keyBytes } from '../lib/keyed-state.js';
import { strSpan, writeStrHeader } from '../lib/msgpack.js';
import { batchOperator } from '../lib/records.js';
import { operatorDefaults } from '../lib/operator.js';

const STATE_VERSION = 0;
const utf8 = new TextDecoder('utf-8', { fatal: true });

const counts = new KeyedState();
const states = new States({ counts });

function invalid(message) {
  return { tag: 'invalid-input', val: `cannot decode MessagePack: ${message}` };
}

const U64_MAX = 0xffffffffffffffffn;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function add(total, inc) {
  // Numbers while exact; BigInt past 2^53; saturates at u64::MAX like the Rust operator.
  if (typeof total === 'number' && typeof inc === 'number') {
    const sum = total + inc;
    if (Number.isSafeInteger(sum)) return sum;
  }
  const sum = BigInt(total) + BigInt(inc);
  return sum > U64_MAX ? U64_MAX : sum;
}

/**
 * The canonical key of a word's key string (a MessagePack str, valid UTF-8): itself, or
 * re-encoded with the shortest header so that it equals what an encoder writes. Run for
 * the keys the state does not hold yet; throws `invalid-input` for anything else.
 */
function wordKey(key) {
  const bytes = keyBytes(key);
  let span;
  try {
    span = strSpan(bytes, 0, bytes.length);
  } catch (e) {
    throw invalid(e.message);
  }
  try {
    utf8.decode(bytes.subarray(span.start, span.end));
  } catch (e) {
    throw invalid('a key is not valid UTF-8');
  }
  if (span.canonical) return key;
  const n = span.end - span.start;
  const w = { out: [], byte(b) { this.out.push(b); }, u16(v) { this.out.push(v >> 8, v & 0xff); },
    u32(v) { this.out.push(v >>> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff); } };
  writeStrHeader(w, n);
  return String.fromCharCode(...w.out) + keyString(bytes, span.start, span.end);
}

export function processBatch(_input, records, out) {
  // Distinct words of the batch in first-seen order, with their latest timestamp.
  const seen = new Map();
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    let key = record[0];
    let total = counts.get(key);
    if (total === undefined) {
      key = wordKey(key);
      total = counts.get(key);
    }
    const inc = record[1];
    if (!(typeof inc === 'number' && inc >= 0 && inc % 1 === 0) && !(typeof inc === 'bigint' && inc >= 0n)) {
      throw invalid(`the increment is not an unsigned integer: ${String(inc)}`);
    }
    const base = total === undefined ? 0 : total;
    // Numbers while exact (written out: a call costs more than the test in the interpreter).
    counts.set(key, typeof base === 'number' && typeof inc === 'number' && base + inc <= MAX_SAFE ? base + inc : add(base, inc));
    const timestamp = record[2];
    const latest = seen.get(key);
    if (latest === undefined || timestamp > latest) seen.set(key, timestamp);
  }
  seen.forEach((timestamp, key) => out.push([key, counts.get(key), timestamp]));
}

const batch = batchOperator(processBatch);

export const encodedBatches = batch.encodedBatches;

export const operator = {
  ...operatorDefaults(states, { stateVersion: STATE_VERSION }),

  describe() {
    return { name: 'wordcount-js', stateVersion: STATE_VERSION, migratesFrom: [] };
  },

  process: batch.process,
};

// For tests under Node (not part of the component's interface).
export const _internal = { counts, keyToBytes: keyBytes };
