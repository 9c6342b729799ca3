// Helpers shared by the unit tests: build batches, read outputs and state deltas.
import { encode, decode, ByteWriter } from '../lib/msgpack.js';

export const hex = (bytes) => Buffer.from(bytes).toString('hex');

export function batchOf(records) {
  const w = new ByteWriter();
  const entries = [];
  for (const { key, value, timestamp } of records) {
    const k = key === undefined ? new Uint8Array(0) : encode(key);
    const v = encode(value);
    w.bytes(k);
    w.bytes(v);
    entries.push({ keyLen: k.length, valueLen: v.length, timestamp: BigInt(timestamp) });
  }
  return { data: w.toBytes(), entries };
}

export function recordsOf(batch) {
  const out = [];
  let off = 0;
  for (const e of batch.entries) {
    const key = e.keyLen ? decode(batch.data, off, off + e.keyLen) : undefined;
    const value = decode(batch.data, off + e.keyLen, off + e.keyLen + e.valueLen);
    out.push({ key, value, timestamp: Number(e.timestamp) });
    off += e.keyLen + e.valueLen;
  }
  return out;
}

export function changesOf(delta) {
  const out = [];
  let off = 0;
  for (const e of delta.entries) {
    const key = decode(delta.data, off, off + e.keyLen);
    const value = e.kind === 'put' ? decode(delta.data, off + e.keyLen, off + e.keyLen + e.valueLen) : null;
    out.push([delta.names[e.state], e.kind, key, value]);
    off += e.keyLen + e.valueLen;
  }
  return out;
}
