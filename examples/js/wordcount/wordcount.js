// Word count in JavaScript: a keyed, stateful Weir operator, equivalent to the Rust
// examples/wordcount.
//
// Input: records keyed by a word (MessagePack str) whose value is an increment (MessagePack
// uint), as the tokenizer emits them. State: the running count of every word, in the keyed
// state "counts" (key = the word's MessagePack bytes, value = MessagePack uint), schema
// version 0 — the same entries as the Rust operator writes. Output: for each input batch,
// one record per distinct word of the batch, in first-seen order: key = the word, value =
// its new total, timestamp = the latest timestamp of the word's records in the batch.

import { KeyedState, States, keyString } from '../lib/keyed-state.js';
import { Reader, strSpan, writeStrHeader, write, MsgpackError } from '../lib/msgpack.js';
import { BatchWriter, forEachRecord, toWitError } from '../lib/batch.js';
import { operatorDefaults } from '../lib/operator.js';

const STATE_VERSION = 0;
const utf8 = new TextDecoder('utf-8', { fatal: true });

const counts = new KeyedState();
const states = new States({ counts });

function readIncrement(data, start, end) {
  const r = new Reader(data, start, end);
  const v = r.value();
  if (r.pos !== end) throw new MsgpackError('trailing bytes after the increment');
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === 'bigint' && v >= 0n) return v;
  throw new MsgpackError(`the increment is not an unsigned integer: ${String(v)}`);
}

const U64_MAX = 0xffffffffffffffffn;

function add(total, inc) {
  // Numbers while exact; BigInt past 2^53; saturates at u64::MAX like the Rust operator.
  if (typeof total === 'number' && typeof inc === 'number') {
    const sum = total + inc;
    if (Number.isSafeInteger(sum)) return sum;
  }
  const sum = BigInt(total) + BigInt(inc);
  return sum > U64_MAX ? U64_MAX : sum;
}

/** The canonical key of the word at data[start, end) (a MessagePack str). */
function wordKey(data, start, end) {
  const span = strSpan(data, start, end);
  if (span.canonical) return keyString(data, start, end);
  // Re-encode a non-shortest header so that the key equals what an encoder writes.
  const n = span.end - span.start;
  const w = { out: [], byte(b) { this.out.push(b); }, u16(v) { this.out.push(v >> 8, v & 0xff); },
    u32(v) { this.out.push(v >>> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff); } };
  writeStrHeader(w, n);
  return String.fromCharCode(...w.out) + keyString(data, span.start, span.end);
}

function keyToBytes(key) {
  const out = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) out[i] = key.charCodeAt(i);
  return out;
}

export const operator = {
  ...operatorDefaults(states, { stateVersion: STATE_VERSION }),

  describe() {
    return { name: 'wordcount-js', stateVersion: STATE_VERSION, migratesFrom: [] };
  },

  process(_input, batch) {
    try {
      // Distinct words of the batch in first-seen order, with their latest timestamp.
      const seen = new Map();
      forEachRecord(batch, (data, keyStart, keyEnd, valueEnd, timestamp) => {
        let key;
        let inc;
        try {
          key = wordKey(data, keyStart, keyEnd);
          inc = readIncrement(data, keyEnd, valueEnd);
        } catch (e) {
          throw { tag: 'invalid-input', val: `cannot decode MessagePack: ${e.message}` };
        }
        const total = counts.get(key);
        if (total === undefined) {
          // A new word: check that it is valid UTF-8, as the Rust operator's &str does.
          try {
            const span = strSpan(data, keyStart, keyEnd);
            utf8.decode(data.subarray(span.start, span.end));
          } catch (e) {
            throw { tag: 'invalid-input', val: 'cannot decode MessagePack: a key is not valid UTF-8' };
          }
          counts.set(key, add(0, inc));
        } else {
          counts.set(key, add(total, inc));
        }
        const latest = seen.get(key);
        if (latest === undefined || timestamp > latest) seen.set(key, timestamp);
      });
      const out = new BatchWriter();
      for (const [key, timestamp] of seen) {
        const total = counts.get(key);
        out.emitWith(
          (w) => { for (let i = 0; i < key.length; i++) w.byte(key.charCodeAt(i)); },
          (w) => write(w, total),
          timestamp,
        );
      }
      return out.finish();
    } catch (e) {
      throw toWitError(e);
    }
  },
};

// For tests under Node (not part of the component's interface).
export const _internal = { counts, keyToBytes };
