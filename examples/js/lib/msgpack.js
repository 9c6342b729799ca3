// A tiny MessagePack encoder/decoder: nil, bool, int (uint/int up to 64 bits), float, str,
// bin, array and map (no ext types). Enough for Weir keys, values and state entries.
//
// Integers decode to Number when they are safe integers and to BigInt otherwise; the
// encoder takes either, and writes a Number that is not a safe integer as a float64 (the
// rule the host applies to numbers in the JSON documents of `encoded-batches`). Maps decode
// to `Map` when `opts.maps` is true, as JSON.parse would give them when `opts.json` is true
// (see `Reader`), and to plain objects otherwise (keys in their encoded order). To encode a
// map in a fixed field order, pass a `Map` or a plain object (insertion order is kept).

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/** A growable byte buffer that MessagePack (and batches) are written into. */
export class ByteWriter {
  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity);
    this.view = new DataView(this.buf.buffer);
    this.len = 0;
  }
  reserve(n) {
    const need = this.len + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  byte(b) {
    this.reserve(1);
    this.buf[this.len++] = b;
  }
  bytes(src) {
    this.reserve(src.length);
    this.buf.set(src, this.len);
    this.len += src.length;
  }
  u16(v) { this.reserve(2); this.view.setUint16(this.len, v); this.len += 2; }
  u32(v) { this.reserve(4); this.view.setUint32(this.len, v); this.len += 4; }
  u64(v) { this.reserve(8); this.view.setBigUint64(this.len, BigInt(v)); this.len += 8; }
  f64(v) { this.reserve(8); this.view.setFloat64(this.len, v); this.len += 8; }
  i64(v) { this.reserve(8); this.view.setBigInt64(this.len, BigInt(v)); this.len += 8; }
  /** The bytes written so far (a copy, so the writer can be reused). */
  toBytes() { return this.buf.slice(0, this.len); }
  clear() { this.len = 0; }
}

export class MsgpackError extends Error {}

function writeUint(w, v) {
  // v is a non-negative Number (safe integer) or BigInt.
  if (typeof v === 'bigint') {
    if (v > 0xffffffffn) {
      if (v > 0xffffffffffffffffn) throw new MsgpackError(`integer ${v} does not fit in 64 bits`);
      w.byte(0xcf); w.u64(v); return;
    }
    v = Number(v);
  }
  if (v < 0x80) w.byte(v);
  else if (v < 0x100) { w.byte(0xcc); w.byte(v); }
  else if (v < 0x10000) { w.byte(0xcd); w.u16(v); }
  else if (v < 0x100000000) { w.byte(0xce); w.u32(v); }
  else { w.byte(0xcf); w.u64(v); }
}

function writeInt(w, v) {
  // v is a negative Number (safe integer) or BigInt.
  if (typeof v === 'bigint') {
    if (v < -0x80000000n) {
      if (v < -0x8000000000000000n) throw new MsgpackError(`integer ${v} does not fit in 64 bits`);
      w.byte(0xd3); w.i64(v); return;
    }
    v = Number(v);
  }
  if (v >= -32) w.byte(v & 0xff);
  else if (v >= -0x80) { w.byte(0xd0); w.byte(v & 0xff); }
  else if (v >= -0x8000) { w.byte(0xd1); w.u16(v & 0xffff); }
  else if (v >= -0x80000000) { w.byte(0xd2); w.u32(v >>> 0); }
  else { w.byte(0xd3); w.i64(v); }
}

/** Writes the header of a str of `n` bytes (the shortest form, as rmp writes it). */
function writeStrHeader(w, n) {
  if (n < 32) w.byte(0xa0 | n);
  else if (n < 0x100) { w.byte(0xd9); w.byte(n); }
  else if (n < 0x10000) { w.byte(0xda); w.u16(n); }
  else { w.byte(0xdb); w.u32(n); }
}

export function writeStr(w, s) {
  const n = s.length;
  if (n < 32) {
    // A short ASCII string: written byte by byte (no TextEncoder call, no new array).
    w.reserve(n + 1);
    const buf = w.buf;
    let p = w.len + 1;
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[p++] = c;
    }
    if (i === n) {
      buf[w.len] = 0xa0 | n;
      w.len = p;
      return;
    }
  }
  const bytes = utf8Encoder.encode(s);
  writeStrHeader(w, bytes.length);
  w.bytes(bytes);
}

function writeLenHeader(w, n, fix, fixMax, b16, b32) {
  if (n < fixMax) w.byte(fix | n);
  else if (n < 0x10000) { w.byte(b16); w.u16(n); }
  else { w.byte(b32); w.u32(n); }
}

/** Appends the MessagePack encoding of `value` to the ByteWriter `w`. */
export function write(w, value) {
  switch (typeof value) {
    case 'number':
      if (!Number.isSafeInteger(value)) { w.byte(0xcb); w.f64(value); return; }
      return value >= 0 ? writeUint(w, value) : writeInt(w, value);
    case 'bigint':
      return value >= 0n ? writeUint(w, value) : writeInt(w, value);
    case 'string':
      return writeStr(w, value);
    case 'boolean':
      return w.byte(value ? 0xc3 : 0xc2);
    case 'undefined':
      return w.byte(0xc0);
    case 'object':
      if (value === null) return w.byte(0xc0);
      if (value instanceof Uint8Array) {
        const n = value.length;
        if (n < 0x100) { w.byte(0xc4); w.byte(n); }
        else if (n < 0x10000) { w.byte(0xc5); w.u16(n); }
        else { w.byte(0xc6); w.u32(n); }
        return w.bytes(value);
      }
      if (Array.isArray(value)) {
        writeLenHeader(w, value.length, 0x90, 16, 0xdc, 0xdd);
        for (const item of value) write(w, item);
        return;
      }
      if (value instanceof Map) {
        writeLenHeader(w, value.size, 0x80, 16, 0xde, 0xdf);
        for (const [k, v] of value) { write(w, k); write(w, v); }
        return;
      }
      {
        const keys = Object.keys(value);
        writeLenHeader(w, keys.length, 0x80, 16, 0xde, 0xdf);
        for (const k of keys) { writeStr(w, k); write(w, value[k]); }
        return;
      }
    default:
      throw new MsgpackError(`cannot encode a ${typeof value}`);
  }
}

/** The MessagePack encoding of `value` as a new Uint8Array. */
export function encode(value) {
  const w = new ByteWriter(64);
  write(w, value);
  return w.toBytes();
}

/**
 * The MessagePack encoding of `value` as JSON.stringify and then the host would make it
 * (the `encoded-batches` JSON rule), so that a batch operator's output has the same bytes
 * whichever path ran it: a safe integer is an int, any other finite number a float64, NaN
 * and the infinities nil; an object property whose value is undefined, a function or a
 * symbol is left out (nil in an array or on its own); an object with a `toJSON` method is
 * written as what that returns. Beyond JSON, as `write` does: a BigInt is an int, a
 * Uint8Array bin, a Map a map with its keys as they are (the JSON path refuses these).
 */
export function writeJsonLike(w, value) {
  switch (typeof value) {
    case 'number':
      if (Number.isSafeInteger(value)) return value >= 0 ? writeUint(w, value) : writeInt(w, value);
      if (!Number.isFinite(value)) return w.byte(0xc0);
      w.byte(0xcb);
      w.f64(value);
      return;
    case 'string':
      return writeStr(w, value);
    case 'boolean':
      return w.byte(value ? 0xc3 : 0xc2);
    case 'bigint':
      return value >= 0n ? writeUint(w, value) : writeInt(w, value);
    case 'object': {
      if (value === null) return w.byte(0xc0);
      if (Array.isArray(value)) {
        const n = value.length;
        writeLenHeader(w, n, 0x90, 16, 0xdc, 0xdd);
        for (let i = 0; i < n; i++) writeJsonLike(w, value[i]);
        return;
      }
      if (value instanceof Uint8Array || value instanceof Map) return write(w, value);
      if (typeof value.toJSON === 'function') {
        const replaced = value.toJSON();
        if (replaced !== value) return writeJsonLike(w, replaced);
      }
      const keys = Object.keys(value);
      let n = 0;
      for (let i = 0; i < keys.length; i++) if (isJsonValue(value[keys[i]])) n++;
      writeLenHeader(w, n, 0x80, 16, 0xde, 0xdf);
      for (let i = 0; i < keys.length; i++) {
        const v = value[keys[i]];
        if (!isJsonValue(v)) continue;
        writeStr(w, keys[i]);
        writeJsonLike(w, v);
      }
      return;
    }
    default: // undefined, function, symbol: JSON.stringify writes null
      return w.byte(0xc0);
  }
}

/** Whether JSON.stringify writes an object property with this value (or leaves it out). */
function isJsonValue(v) {
  const t = typeof v;
  return t !== 'undefined' && t !== 'function' && t !== 'symbol';
}

/**
 * A reader over `bytes[start, end)`. Options: `maps` decodes every map to a `Map`; `json`
 * decodes values to what JSON.parse gives for the host's JSON document of them (a map
 * whose keys are all strings to a plain object, keys in their encoded order and a repeated
 * key's last value winning; any other map to a `Map`), and the types JSON lacks as usual.
 */
export class Reader {
  constructor(bytes, start = 0, end = bytes.length, opts = {}) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
    this.end = end;
    this.maps = !!opts.maps;
    this.json = !!opts.json;
  }
  need(n) {
    if (this.pos + n > this.end) throw new MsgpackError('unexpected end of MessagePack data');
  }
  u8() { this.need(1); return this.bytes[this.pos++]; }
  u16() { this.need(2); const v = this.view.getUint16(this.pos); this.pos += 2; return v; }
  u32() { this.need(4); const v = this.view.getUint32(this.pos); this.pos += 4; return v; }
  u64() {
    this.need(8);
    // Two u32 halves while the value is below 2^53 (no BigInt for the common case).
    const hi = this.view.getUint32(this.pos);
    if (hi < 0x200000) {
      const v = hi * 0x100000000 + this.view.getUint32(this.pos + 4);
      this.pos += 8;
      return v;
    }
    const v = this.view.getBigUint64(this.pos);
    this.pos += 8;
    return v;
  }
  i64() {
    this.need(8);
    const hi = this.view.getInt32(this.pos);
    if (hi >= -0x200000 && hi < 0x200000) {
      const v = hi * 0x100000000 + this.view.getUint32(this.pos + 4);
      if (Number.isSafeInteger(v)) {
        this.pos += 8;
        return v;
      }
    }
    const v = this.view.getBigInt64(this.pos);
    this.pos += 8;
    return v;
  }
  raw(n) {
    this.need(n);
    const out = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  str(n) {
    if (n <= 24) {
      // Short ASCII strings without a TextDecoder call (and without a subarray).
      this.need(n);
      const bytes = this.bytes;
      const end = this.pos + n;
      let s = '';
      let i = this.pos;
      for (; i < end; i++) {
        const c = bytes[i];
        if (c >= 0x80) break;
        s += String.fromCharCode(c);
      }
      if (i === end) {
        this.pos = end;
        return s;
      }
    }
    const raw = this.raw(n);
    try {
      return utf8Decoder.decode(raw);
    } catch (e) {
      throw new MsgpackError('a MessagePack str is not valid UTF-8');
    }
  }
  /** Reads one value. */
  value() {
    const b = this.u8();
    if (b < 0x80) return b;
    if (b >= 0xe0) return b - 0x100;
    if ((b & 0xe0) === 0xa0) return this.str(b & 0x1f);
    if ((b & 0xf0) === 0x90) return this.array(b & 0x0f);
    if ((b & 0xf0) === 0x80) return this.map(b & 0x0f);
    switch (b) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return this.raw(this.u8()).slice();
      case 0xc5: return this.raw(this.u16()).slice();
      case 0xc6: return this.raw(this.u32()).slice();
      case 0xca: { this.need(4); const v = this.view.getFloat32(this.pos); this.pos += 4; return v; }
      case 0xcb: { this.need(8); const v = this.view.getFloat64(this.pos); this.pos += 8; return v; }
      case 0xcc: return this.u8();
      case 0xcd: return this.u16();
      case 0xce: return this.u32();
      case 0xcf: return this.u64();
      case 0xd0: { const v = this.u8(); return v >= 0x80 ? v - 0x100 : v; }
      case 0xd1: { const v = this.u16(); return v >= 0x8000 ? v - 0x10000 : v; }
      case 0xd2: { this.need(4); const v = this.view.getInt32(this.pos); this.pos += 4; return v; }
      case 0xd3: return this.i64();
      case 0xd9: return this.str(this.u8());
      case 0xda: return this.str(this.u16());
      case 0xdb: return this.str(this.u32());
      case 0xdc: return this.array(this.u16());
      case 0xdd: return this.array(this.u32());
      case 0xde: return this.map(this.u16());
      case 0xdf: return this.map(this.u32());
      default: throw new MsgpackError(`unsupported MessagePack type byte 0x${b.toString(16)}`);
    }
  }
  /**
   * Reads the header of a map and returns its number of pairs, or -1 (consuming nothing)
   * when the next value is not a map.
   */
  mapLength() {
    this.need(1);
    const b = this.bytes[this.pos];
    if ((b & 0xf0) === 0x80) { this.pos++; return b & 0x0f; }
    if (b === 0xde) { this.pos++; return this.u16(); }
    if (b === 0xdf) { this.pos++; return this.u32(); }
    return -1;
  }
  /**
   * Reads a str header and returns the [start, end) of its UTF-8 bytes without decoding
   * them, or null (consuming nothing) when the next value is not a str.
   */
  strBytes() {
    this.need(1);
    const b = this.bytes[this.pos];
    let n;
    if ((b & 0xe0) === 0xa0) { this.pos++; n = b & 0x1f; }
    else if (b === 0xd9) { this.pos++; n = this.u8(); }
    else if (b === 0xda) { this.pos++; n = this.u16(); }
    else if (b === 0xdb) { this.pos++; n = this.u32(); }
    else return null;
    this.need(n);
    const start = this.pos;
    this.pos += n;
    return [start, this.pos];
  }
  /** Skips one value without decoding it (checks only that its bytes are there). */
  skip() {
    const b = this.u8();
    if (b < 0x80 || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) return;
    if ((b & 0xe0) === 0xa0) { this.raw(b & 0x1f); return; }
    if ((b & 0xf0) === 0x90) { for (let n = b & 0x0f; n > 0; n--) this.skip(); return; }
    if ((b & 0xf0) === 0x80) { for (let n = 2 * (b & 0x0f); n > 0; n--) this.skip(); return; }
    switch (b) {
      case 0xc4: case 0xd9: this.raw(this.u8()); return;
      case 0xc5: case 0xda: this.raw(this.u16()); return;
      case 0xc6: case 0xdb: this.raw(this.u32()); return;
      case 0xcc: case 0xd0: this.raw(1); return;
      case 0xcd: case 0xd1: this.raw(2); return;
      case 0xca: case 0xce: case 0xd2: this.raw(4); return;
      case 0xcb: case 0xcf: case 0xd3: this.raw(8); return;
      case 0xdc: for (let n = this.u16(); n > 0; n--) this.skip(); return;
      case 0xdd: for (let n = this.u32(); n > 0; n--) this.skip(); return;
      case 0xde: for (let n = 2 * this.u16(); n > 0; n--) this.skip(); return;
      case 0xdf: for (let n = 2 * this.u32(); n > 0; n--) this.skip(); return;
      default: throw new MsgpackError(`unsupported MessagePack type byte 0x${b.toString(16)}`);
    }
  }
  array(n) {
    const out = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.value();
    return out;
  }
  map(n) {
    if (this.json) return this.jsonMap(n);
    if (this.maps) {
      const out = new Map();
      for (let i = 0; i < n; i++) { const k = this.value(); out.set(k, this.value()); }
      return out;
    }
    const out = {};
    for (let i = 0; i < n; i++) {
      const k = this.value();
      out[typeof k === 'string' ? k : String(k)] = this.value();
    }
    return out;
  }
  /** A map as JSON.parse would give it: a plain object if every key is a string, else a Map. */
  jsonMap(n) {
    const start = this.pos;
    const out = {};
    for (let i = 0; i < n; i++) {
      const k = this.value();
      if (typeof k !== 'string') {
        // Read it again as a Map (rare: JSON cannot carry such a map).
        this.pos = start;
        const map = new Map();
        for (let j = 0; j < n; j++) { const key = this.value(); map.set(key, this.value()); }
        return map;
      }
      const v = this.value();
      // JSON.parse makes `__proto__` an own property; an assignment would set the prototype.
      if (k === '__proto__') Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
      else out[k] = v;
    }
    return out;
  }
}

/** Decodes exactly one value from `bytes[start, end)`; trailing bytes are an error. */
export function decode(bytes, start = 0, end = bytes.length, opts) {
  const r = new Reader(bytes, start, end, opts);
  const v = r.value();
  if (r.pos !== end) throw new MsgpackError(`${end - r.pos} trailing bytes after a MessagePack value`);
  return v;
}

/**
 * Reads a MessagePack str at `bytes[start, end)` without copying. Returns `{ start, end,
 * canonical }`: where the UTF-8 payload lies, and whether the header is the shortest form
 * (so that the bytes equal what an encoder of the decoded string writes). Throws if the
 * bytes are not exactly one str.
 */
export function strSpan(bytes, start, end) {
  if (start >= end) throw new MsgpackError('expected a MessagePack str, found no bytes');
  const b = bytes[start];
  let n, h;
  if ((b & 0xe0) === 0xa0) { n = b & 0x1f; h = 1; }
  else if (b === 0xd9 && end - start >= 2) { n = bytes[start + 1]; h = 2; }
  else if (b === 0xda && end - start >= 3) { n = (bytes[start + 1] << 8) | bytes[start + 2]; h = 3; }
  else if (b === 0xdb && end - start >= 5) {
    n = ((bytes[start + 1] << 24) | (bytes[start + 2] << 16) | (bytes[start + 3] << 8) | bytes[start + 4]) >>> 0;
    h = 5;
  } else throw new MsgpackError(`expected a MessagePack str, found type byte 0x${b.toString(16)}`);
  if (start + h + n !== end) throw new MsgpackError('a MessagePack str does not fill its bytes exactly');
  const canonical = h === 1 ? true : h === 2 ? n >= 32 : h === 3 ? n >= 0x100 : n >= 0x10000;
  return { start: start + h, end, canonical };
}

export { writeStrHeader };
