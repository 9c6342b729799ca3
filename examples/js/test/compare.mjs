// Compares the file-sink outputs (JSON lines in part-* files) of two runs.
// Usage: node compare.mjs <dirA> <dirB> [--per-key | --final | --final-by=<field>]
// Default: the sorted lines must be identical. --final instead checks only that every key's
// last total is the same in both and that no key repeats a total (for
// runs whose batching differs, e.g. several upstream instances or a recovery). --per-key also checks, for every key, that
// the sequence of records in output order is identical and that no (key, value) repeats
// (a duplicated total would mean a record was emitted twice after a recovery).
// --final-by=<field> is --final where a key's last record is the one whose value has the
// largest <field> (for outputs whose sink parallelism scatters a key's records over files).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

function load(dir) {
  const files = readdirSync(dir).filter((f) => f.startsWith('part-')).sort();
  const lines = [];
  for (const f of files) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line) lines.push(line);
  }
  return lines;
}

function perKey(lines) {
  const m = new Map();
  for (const line of lines) {
    const r = JSON.parse(line);
    const k = JSON.stringify(r.key);
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(line);
  }
  return m;
}

const [a, b, flagArg] = process.argv.slice(2);
const finalBy = flagArg?.startsWith('--final-by=') ? flagArg.slice('--final-by='.length) : null;
const flag = finalBy ? '--final' : flagArg;
const la = load(a);
const lb = load(b);
let ok = true;
if (flag === '--final') {
  const ka = perKey(la);
  const kb = perKey(lb);
  const last = finalBy
    ? (seq) => JSON.stringify(seq.map((l) => JSON.parse(l).value).reduce((m, v) => (v[finalBy] > m[finalBy] ? v : m)))
    : (seq) => JSON.stringify(JSON.parse(seq[seq.length - 1]).value);
  if (ka.size !== kb.size) { ok = false; console.log(`${ka.size} vs ${kb.size} keys`); }
  for (const [k, seq] of ka) {
    const other = kb.get(k);
    if (!other || last(seq) !== last(other)) {
      ok = false;
      console.log(`key ${k}: final ${last(seq)} vs ${other && last(other)}`);
      break;
    }
  }
  for (const [name, m] of [['A', ka], ['B', kb]]) {
    for (const [k, seq] of m) {
      const values = seq.map((l) => JSON.stringify(JSON.parse(l).value));
      if (new Set(values).size !== values.length) {
        ok = false;
        console.log(`${name}: key ${k} has a duplicated total`);
        break;
      }
    }
  }
  console.log(ok ? `same final totals of ${ka.size} keys, no duplicated total (${la.length} vs ${lb.length} records)` : 'DIFFERENT');
  process.exit(ok ? 0 : 1);
}
const sa = [...la].sort();
const sb = [...lb].sort();
if (sa.length !== sb.length || sa.some((l, i) => l !== sb[i])) {
  ok = false;
  console.log(`sorted lines differ: ${la.length} vs ${lb.length} lines`);
  const setB = new Set(sb);
  const setA = new Set(sa);
  console.log('only in A (first 5):', sa.filter((l) => !setB.has(l)).slice(0, 5));
  console.log('only in B (first 5):', sb.filter((l) => !setA.has(l)).slice(0, 5));
}
if (flag === '--per-key') {
  const ka = perKey(la);
  const kb = perKey(lb);
  for (const [k, seq] of ka) {
    const other = kb.get(k) ?? [];
    if (seq.join('\n') !== other.join('\n')) {
      ok = false;
      console.log(`key ${k}: sequences differ (${seq.length} vs ${other.length} records)`);
      break;
    }
  }
  for (const [name, m] of [['A', ka], ['B', kb]]) {
    for (const [k, seq] of m) {
      const values = seq.map((l) => JSON.stringify(JSON.parse(l).value));
      if (new Set(values).size !== values.length) {
        ok = false;
        console.log(`${name}: key ${k} has a duplicated total`);
        break;
      }
    }
  }
}
console.log(ok ? `identical (${la.length} records)` : 'DIFFERENT');
process.exit(ok ? 0 : 1);
