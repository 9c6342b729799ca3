// KeyedState: a map from record keys (their MessagePack bytes) to values, with change
// tracking for Weir's incremental snapshots. The same contract as the Rust guest SDK's
// `KeyedState` (guest-sdk/src/state/keyed.rs):
//
// - `snapshot(false)` hands over only the changes since the previous snapshot: a put for
//   every key changed since, a delete for every key the host holds that was removed since;
// - `snapshot(true)` hands over every live entry (puts only) and resets the changes;
// - `restore(key, value)` loads a live entry the host saved; restored keys count as held
//   by the host, so removing one later writes a delete.
//
// Keys are the exact key bytes of the records (MessagePack), which is what the host hashes
// to place an entry in a key group. Inside, a key is held as a "binary string" (one char
// per byte), which JavaScript's Map can hash; `keyString` makes one from bytes. It is the
// key string of a record in the batch API (lib/records.js), so a record's key is used as
// it comes. Snapshots write the key bytes and the MessagePack value, whichever path ran.
//
// Values are kept decoded; `codec` encodes them for a snapshot and decodes restored ones
// (MessagePack by default).

import { ByteWriter, write, decode } from './msgpack.js';

/** The binary string (one char per byte) of `bytes[start, end)`, used as a key. */
export function keyString(bytes, start = 0, end = bytes.length) {
  if (end - start > 32) {
    let s = '';
    for (let i = start; i < end; i += 8192) s += String.fromCharCode.apply(null, bytes.subarray(i, Math.min(end, i + 8192)));
    return s;
  }
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(bytes[i]);
  return s;
}

/** The bytes of a binary-string key (throws on a character above U+00FF). */
export function keyBytes(key) {
  const out = new Uint8Array(key.length);
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c > 0xff) throw new RangeError(`a key string has the character U+${c.toString(16).padStart(4, '0')} (above U+00FF)`);
    out[i] = c;
  }
  return out;
}

export const msgpackCodec = {
  write: (w, value) => write(w, value),
  read: (bytes) => decode(bytes),
};

export class KeyedState {
  constructor(codec = msgpackCodec) {
    this.codec = codec;
    /** key -> { value, dirty, persisted } */
    this.map = new Map();
    /** Keys that turned dirty since the last snapshot, in that order (may repeat). */
    this.dirty = [];
    /** Keys the host holds (seen by a snapshot or restored) that were removed since. */
    this.deleted = new Set();
  }

  get size() { return this.map.size; }

  has(key) { return this.map.has(key); }

  /** The value of `key`, or undefined. A read changes nothing. */
  get(key) {
    const slot = this.map.get(key);
    return slot === undefined ? undefined : slot.value;
  }

  /** Sets the value of `key` (marks it changed). */
  set(key, value) {
    const slot = this.map.get(key);
    if (slot === undefined) {
      const persisted = this.deleted.size > 0 && this.deleted.delete(key);
      this.map.set(key, { value, dirty: true, persisted });
      this.dirty.push(key);
    } else {
      slot.value = value;
      if (!slot.dirty) {
        slot.dirty = true;
        this.dirty.push(key);
      }
    }
    return this;
  }

  /**
   * The value of `key` (or undefined), marked changed: for a value (an object) about to be
   * mutated in place. One lookup where `get` then `touch` take two.
   */
  modify(key) {
    const slot = this.map.get(key);
    if (slot === undefined) return undefined;
    if (!slot.dirty) {
      slot.dirty = true;
      this.dirty.push(key);
    }
    return slot.value;
  }

  /**
   * Marks `key` changed after its value (an object) was mutated in place. Does nothing if
   * the key has no value.
   */
  touch(key) {
    const slot = this.map.get(key);
    if (slot !== undefined && !slot.dirty) {
      slot.dirty = true;
      this.dirty.push(key);
    }
  }

  /** Removes `key`; returns whether it had a value. */
  delete(key) {
    const slot = this.map.get(key);
    if (slot === undefined) return false;
    this.map.delete(key);
    if (slot.persisted) this.deleted.add(key);
    return true;
  }

  /** Iterates over [key, value] of the live entries, in no particular order. */
  *entries() {
    for (const [key, slot] of this.map) yield [key, slot.value];
  }

  /**
   * Writes this state's changes (or, when `full`, every live entry) into `delta` (a
   * DeltaWriter) as state number `index`.
   */
  snapshot(full, delta, index) {
    if (full) {
      for (const [key, slot] of this.map) {
        delta.put(index, key, slot.value, this.codec);
        slot.dirty = false;
        slot.persisted = true;
      }
      this.dirty.length = 0;
      this.deleted.clear();
      return;
    }
    const deleted = [...this.deleted].sort();
    this.deleted.clear();
    for (const key of deleted) delta.delete(index, key);
    for (const key of this.dirty) {
      // A key removed since it turned dirty is absent (and in `deleted` if the host holds
      // it); a key listed twice is written once.
      const slot = this.map.get(key);
      if (slot !== undefined && slot.dirty) {
        delta.put(index, key, slot.value, this.codec);
        slot.dirty = false;
        slot.persisted = true;
      }
    }
    this.dirty.length = 0;
  }

  /** Loads one saved live entry (`value` is its encoded bytes), or removes `key` if null. */
  restore(key, value) {
    if (value === null) {
      this.map.delete(key);
      return;
    }
    this.map.set(key, { value: this.codec.read(value), dirty: false, persisted: true });
  }
}

/** Builds a WIT `state-delta`: names, one data buffer and one entry per change. */
export class DeltaWriter {
  constructor(names) {
    this.names = names;
    this.data = new ByteWriter(1024);
    this.entries = [];
  }
  put(state, key, value, codec) {
    const start = this.data.len;
    for (let i = 0; i < key.length; i++) this.data.byte(key.charCodeAt(i));
    const keyEnd = this.data.len;
    codec.write(this.data, value);
    this.entries.push({ state, kind: 'put', keyLen: keyEnd - start, valueLen: this.data.len - keyEnd });
  }
  delete(state, key) {
    for (let i = 0; i < key.length; i++) this.data.byte(key.charCodeAt(i));
    this.entries.push({ state, kind: 'delete', keyLen: key.length, valueLen: 0 });
  }
  finish() {
    return { names: this.names, data: this.data.toBytes(), entries: this.entries };
  }
}

/**
 * The named states of an operator: snapshot them all into one state-delta, and route the
 * entries of a restored chunk to them by name.
 */
export class States {
  /** `states`: an object { name: KeyedState, ... } (the order of its names is kept). */
  constructor(states) {
    this.names = Object.keys(states);
    this.list = this.names.map((name) => states[name]);
  }

  snapshot(full) {
    const delta = new DeltaWriter(this.names.slice());
    this.list.forEach((state, index) => state.snapshot(full, delta, index));
    return delta.finish();
  }

  /** Applies one restored chunk (a WIT state-delta). Throws an `invalid-state` error. */
  restore(chunk) {
    const targets = chunk.names.map((name) => this.names.indexOf(name));
    const data = chunk.data;
    let offset = 0;
    chunk.entries.forEach((entry, i) => {
      const keyEnd = offset + entry.keyLen;
      const valueEnd = keyEnd + entry.valueLen;
      if (valueEnd > data.length) {
        throw invalidState(`restore entry ${i} runs past the end of the chunk data (${data.length} bytes)`);
      }
      const name = chunk.names[entry.state] ?? '<no name>';
      const target = targets[entry.state] ?? -1;
      if (target < 0) throw invalidState(`restored state "${name}" is not a state of this operator`);
      const key = keyString(data, offset, keyEnd);
      try {
        this.list[target].restore(key, entry.kind === 'delete' ? null : data.subarray(keyEnd, valueEnd));
      } catch (e) {
        throw invalidState(`state "${name}": cannot restore an entry: ${e.message}`);
      }
      offset = valueEnd;
    });
  }
}

function invalidState(message) {
  return { tag: 'invalid-state', val: message };
}
