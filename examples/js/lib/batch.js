// Flat batches (WIT `batch`): one data buffer of keys and values back to back, one entry
// { keyLen, valueLen, timestamp (BigInt) } per record.

import { ByteWriter, write } from './msgpack.js';

/** Calls `f(data, keyStart, keyEnd, valueEnd, timestamp, index)` for every record. */
export function forEachRecord(batch, f) {
  const data = batch.data;
  const entries = batch.entries;
  let offset = 0;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const keyEnd = offset + e.keyLen;
    const valueEnd = keyEnd + e.valueLen;
    if (valueEnd > data.length) {
      throw { tag: 'invalid-input', val: `record ${i} runs past the end of the batch data (${data.length} bytes)` };
    }
    f(data, offset, keyEnd, valueEnd, e.timestamp, i);
    offset = valueEnd;
  }
}

/** Builds an output batch. */
export class BatchWriter {
  constructor() {
    this.data = new ByteWriter(4096);
    this.entries = [];
  }
  /** Emits a record whose key and value are already encoded (Uint8Array; key may be empty). */
  emitRaw(key, value, timestamp) {
    this.data.bytes(key);
    this.data.bytes(value);
    this.entries.push({ keyLen: key.length, valueLen: value.length, timestamp });
  }
  /**
   * Emits a record: `writeKey(w)` and `writeValue(w)` append the encoded key and value to
   * the ByteWriter `w` (pass null for no key).
   */
  emitWith(writeKey, writeValue, timestamp) {
    const start = this.data.len;
    if (writeKey) writeKey(this.data);
    const keyEnd = this.data.len;
    writeValue(this.data);
    this.entries.push({ keyLen: keyEnd - start, valueLen: this.data.len - keyEnd, timestamp });
  }
  /** Emits a record with `key` and `value` encoded as MessagePack (key null/undefined: no key). */
  emit(key, value, timestamp) {
    this.emitWith(key == null ? null : (w) => write(w, key), (w) => write(w, value), timestamp);
  }
  finish() {
    return { data: this.data.toBytes(), entries: this.entries };
  }
}

export const EMPTY_BATCH = Object.freeze({ data: new Uint8Array(0), entries: [] });

/** Turns anything thrown inside an operator call into a WIT `error` variant. */
export function toWitError(e) {
  if (e && typeof e === 'object' && typeof e.tag === 'string' && 'val' in e) return e;
  return { tag: 'other', val: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
}
