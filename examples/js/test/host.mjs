// What the host does for an operator that wants JSON batches (wit/encoded.wit), written
// here apart from lib/ (its own MessagePack reader, JSON parser and encoder) so that the
// tests compare the two paths against an independent reading of the contract:
// - `toJsonDocument(batch)`: the JSON document `[[key, value, ts], ...]` of a WIT batch, or
//   null when the batch does not qualify (the host then calls `operator.process`);
// - `fromJsonDocument(text)`: the WIT batch of an output document (a number without
//   fraction or exponent within ±(2^53 − 1) an int, any other a float64; compact encoding).

const SAFE = 2n ** 53n - 1n;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

/** Thrown by the reader when a batch cannot go as JSON. */
class NotJson extends Error {}

function readJson(d, r) {
  const need = (n) => { if (r.pos + n > r.end) throw new NotJson('truncated'); };
  const be = (n) => { need(n); let v = 0n; for (let i = 0; i < n; i++) v = (v << 8n) | BigInt(d[r.pos++]); return v; };
  const signed = (n) => BigInt.asIntN(8 * n, be(n));
  const int = (v) => { if (v > SAFE || v < -SAFE) throw new NotJson('big int'); return v.toString(); };
  const float = (f) => {
    if (!Number.isFinite(f)) throw new NotJson('NaN or infinity');
    if (Object.is(f, -0)) return '-0.0';
    return Number.isInteger(f) && Math.abs(f) < 1e21 ? `${f}.0` : String(f);
  };
  const str = (n) => { need(n); const s = d.subarray(r.pos, r.pos + n); r.pos += n; try { return JSON.stringify(utf8.decode(s)); } catch { throw new NotJson('utf-8'); } };
  const arr = (n) => { const items = []; for (let i = 0; i < n; i++) items.push(readJson(d, r)); return `[${items.join(',')}]`; };
  const map = (n) => {
    const items = [];
    for (let i = 0; i < n; i++) {
      const b = d[r.pos];
      if (!((b & 0xe0) === 0xa0 || b === 0xd9 || b === 0xda || b === 0xdb)) throw new NotJson('non-string key');
      const k = readJson(d, r);
      items.push(`${k}:${readJson(d, r)}`);
    }
    return `{${items.join(',')}}`;
  };
  need(1);
  const b = d[r.pos++];
  if (b < 0x80) return String(b);
  if (b >= 0xe0) return String(b - 0x100);
  if ((b & 0xe0) === 0xa0) return str(b & 0x1f);
  if ((b & 0xf0) === 0x90) return arr(b & 0x0f);
  if ((b & 0xf0) === 0x80) return map(b & 0x0f);
  switch (b) {
    case 0xc0: return 'null';
    case 0xc2: return 'false';
    case 0xc3: return 'true';
    case 0xca: { need(4); const v = new DataView(d.buffer, d.byteOffset + r.pos, 4).getFloat32(0); r.pos += 4; return float(v); }
    case 0xcb: { need(8); const v = new DataView(d.buffer, d.byteOffset + r.pos, 8).getFloat64(0); r.pos += 8; return float(v); }
    case 0xcc: return int(be(1));
    case 0xcd: return int(be(2));
    case 0xce: return int(be(4));
    case 0xcf: return int(be(8));
    case 0xd0: return int(signed(1));
    case 0xd1: return int(signed(2));
    case 0xd2: return int(signed(4));
    case 0xd3: return int(signed(8));
    case 0xd9: return str(Number(be(1)));
    case 0xda: return str(Number(be(2)));
    case 0xdb: return str(Number(be(4)));
    case 0xdc: return arr(Number(be(2)));
    case 0xdd: return arr(Number(be(4)));
    case 0xde: return map(Number(be(2)));
    case 0xdf: return map(Number(be(4)));
    default: throw new NotJson(`type byte 0x${b.toString(16)} (bin, ext or unused)`);
  }
}

/** The JSON document of a WIT batch, or null when the host would call `process` instead. */
export function toJsonDocument(batch) {
  const d = batch.data;
  const items = [];
  let off = 0;
  try {
    for (const e of batch.entries) {
      const keyEnd = off + e.keyLen;
      const end = keyEnd + e.valueLen;
      if (end > d.length) return null;
      if (e.timestamp > SAFE || e.timestamp < -SAFE) return null;
      const key = JSON.stringify(String.fromCharCode(...d.subarray(off, keyEnd)));
      const r = { pos: keyEnd, end };
      const value = readJson(d, r);
      if (r.pos !== end) return null;
      items.push(`[${key},${value},${e.timestamp}]`);
      off = end;
    }
  } catch (e) {
    if (e instanceof NotJson) return null;
    throw e;
  }
  return `[${items.join(',')}]`;
}

// ---------------------------------------------------------------------------------------
// JSON text to MessagePack.

class Out {
  constructor() { this.bytes = []; }
  u(n, v) { for (let i = n - 1; i >= 0; i--) this.bytes.push(Number((BigInt(v) >> BigInt(8 * i)) & 0xffn)); }
  int(v) { // v: BigInt
    if (v >= 0n) {
      if (v < 128n) this.bytes.push(Number(v));
      else if (v < 256n) { this.bytes.push(0xcc); this.u(1, v); }
      else if (v < 65536n) { this.bytes.push(0xcd); this.u(2, v); }
      else if (v < 2n ** 32n) { this.bytes.push(0xce); this.u(4, v); }
      else { this.bytes.push(0xcf); this.u(8, v); }
    } else if (v >= -32n) this.bytes.push(Number(v & 0xffn));
    else if (v >= -128n) { this.bytes.push(0xd0); this.u(1, v & 0xffn); }
    else if (v >= -32768n) { this.bytes.push(0xd1); this.u(2, v & 0xffffn); }
    else if (v >= -(2n ** 31n)) { this.bytes.push(0xd2); this.u(4, v & 0xffffffffn); }
    else { this.bytes.push(0xd3); this.u(8, BigInt.asUintN(64, v)); }
  }
  f64(f) { const b = new Uint8Array(8); new DataView(b.buffer).setFloat64(0, f); this.bytes.push(0xcb, ...b); }
  str(s) {
    const b = utf8Encoder.encode(s);
    const n = b.length;
    if (n < 32) this.bytes.push(0xa0 | n);
    else if (n < 256) this.bytes.push(0xd9, n);
    else if (n < 65536) { this.bytes.push(0xda); this.u(2, n); }
    else { this.bytes.push(0xdb); this.u(4, n); }
    for (const x of b) this.bytes.push(x);
  }
  len(n, fix, b16, b32) {
    if (n < 16) this.bytes.push(fix | n);
    else if (n < 65536) { this.bytes.push(b16); this.u(2, n); }
    else { this.bytes.push(b32); this.u(4, n); }
  }
}

/** A JSON parser that writes MessagePack as it reads (numbers by their text). */
class Parser {
  constructor(text) { this.t = text; this.i = 0; }
  ws() { while (/\s/.test(this.t[this.i] ?? '')) this.i++; }
  expect(c) { this.ws(); if (this.t[this.i] !== c) throw new Error(`expected ${c} at ${this.i}`); this.i++; }
  string() {
    this.ws();
    const m = /^"(?:[^"\\]|\\.)*"/s.exec(this.t.slice(this.i));
    if (!m) throw new Error(`expected a string at ${this.i}`);
    this.i += m[0].length;
    return JSON.parse(m[0]);
  }
  number() {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.t.slice(this.i));
    if (!m) throw new Error(`bad token at ${this.i}`);
    this.i += m[0].length;
    return m;
  }
  /** Writes one value to `out`. */
  value(out) {
    this.ws();
    const c = this.t[this.i];
    if (c === '{') {
      this.i++;
      const inner = new Out();
      let n = 0;
      this.ws();
      if (this.t[this.i] === '}') this.i++;
      else for (;;) {
        inner.str(this.string());
        this.expect(':');
        this.value(inner);
        n++;
        this.ws();
        if (this.t[this.i++] === '}') break;
      }
      out.len(n, 0x80, 0xde, 0xdf);
      out.bytes.push(...inner.bytes);
    } else if (c === '[') {
      this.i++;
      const inner = new Out();
      let n = 0;
      this.ws();
      if (this.t[this.i] === ']') this.i++;
      else for (;;) {
        this.value(inner);
        n++;
        this.ws();
        if (this.t[this.i++] === ']') break;
      }
      out.len(n, 0x90, 0xdc, 0xdd);
      out.bytes.push(...inner.bytes);
    } else if (c === '"') out.str(this.string());
    else if (this.t.startsWith('null', this.i)) { this.i += 4; out.bytes.push(0xc0); }
    else if (this.t.startsWith('true', this.i)) { this.i += 4; out.bytes.push(0xc3); }
    else if (this.t.startsWith('false', this.i)) { this.i += 5; out.bytes.push(0xc2); }
    else {
      const m = this.number();
      const whole = m[2] === undefined && m[3] === undefined;
      if (whole && BigInt(m[0]) <= SAFE && BigInt(m[0]) >= -SAFE) out.int(BigInt(m[0]));
      else out.f64(Number(m[0]));
    }
  }
}

/** The WIT batch of an output JSON document. */
export function fromJsonDocument(text) {
  const p = new Parser(text);
  const data = new Out();
  const entries = [];
  p.expect('[');
  p.ws();
  if (p.t[p.i] === ']') return { data: new Uint8Array(0), entries };
  for (;;) {
    p.expect('[');
    const key = p.string();
    const keyStart = data.bytes.length;
    for (let i = 0; i < key.length; i++) {
      if (key.charCodeAt(i) > 0xff) throw new Error('a key character above U+00FF');
      data.bytes.push(key.charCodeAt(i));
    }
    p.expect(',');
    const valueStart = data.bytes.length;
    p.value(data);
    p.expect(',');
    p.ws();
    const ts = p.number();
    if (ts[2] !== undefined || ts[3] !== undefined) throw new Error('a timestamp that is not an integer');
    p.expect(']');
    entries.push({ keyLen: valueStart - keyStart, valueLen: data.bytes.length - valueStart, timestamp: BigInt(ts[0]) });
    p.ws();
    if (p.t[p.i++] === ']') break;
  }
  return { data: new Uint8Array(data.bytes), entries };
}

/**
 * Runs a batch through an operator module as the host would: the JSON path when the batch
 * qualifies, else `operator.process`. Returns `{ path, batch }`.
 */
export function hostProcess(module, input, batch) {
  const doc = toJsonDocument(batch);
  if (doc === null) return { path: 'plain', batch: module.operator.process(input, batch) };
  const out = module.encodedBatches.processEncoded(input, utf8Encoder.encode(doc));
  return { path: 'json', batch: fromJsonDocument(new TextDecoder().decode(out)) };
}
