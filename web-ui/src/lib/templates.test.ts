import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { JobSpec } from '../api/types';
import { componentRef, validate } from './jsonschema';
import { KAFKA_PLACEHOLDER, TEMPLATES, templateById, templateModules } from './templates';

const read = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const openapi: unknown = JSON.parse(read('../api/openapi.json'));
const engine = (path: string) => read(`../../../engine/${path}`);

/** The `builtin:` modules the `weir` binary embeds (engine/build.rs: `(crate, name, true)`). */
const EMBEDDED = [...engine('build.rs').matchAll(/\("[\w-]+", "([\w-]+)", true\)/g)].map((m) => `builtin:${m[1]}`);

/** The connectors the planner knows (engine/src/connectors/mod.rs), less `file`, which the API refuses. */
function connectors(kind: 'source' | 'sink'): string[] {
  const m = new RegExp(`kind: "${kind}",\\s*name: other\\.to_string\\(\\),\\s*known: "([^"]+)"`).exec(engine('src/connectors/mod.rs'));
  return m![1]!.split(', ').filter((c) => c !== 'file');
}

/** The fields of a Rust struct (or enum variant) in `source`, and those serde requires. */
function rustFields(source: string, header: RegExp, close = '\n}'): { fields: string[]; required: string[] } {
  const start = source.search(header);
  expect(start, String(header)).toBeGreaterThan(-1);
  const body = source.slice(start, source.indexOf(close, start));
  const fields: string[] = [];
  const required: string[] = [];
  let attrs = '';
  for (const line of body.split('\n').slice(1)) {
    const t = line.trim();
    if (t.startsWith('#[')) attrs += t;
    const f = /^(?:pub )?(\w+): ([^,]+),?$/.exec(t);
    if (f) {
      const skipped = /\bskip\b|skip_deserializing/.test(attrs);
      if (!skipped) fields.push(f[1]!);
      if (!skipped && !attrs.includes('default') && !f[2]!.startsWith('Option<')) required.push(f[1]!);
      attrs = '';
    }
  }
  return { fields, required };
}

/** What each connector's config may hold: its struct's fields (sources also take the common options). */
const COMMON_SOURCE = ['batch_size', 'batch_bytes', 'out_of_orderness_ms', 'records_per_second'];
const CONFIGS: Record<string, { fields: string[]; required: string[] }> = {
  'source:stream': rustFields(engine('src/connectors/stream.rs'), /pub struct StreamSourceConfig \{/),
  'sink:stream': rustFields(engine('src/connectors/stream.rs'), /pub struct StreamSinkConfig \{/),
  'source:nexmark': rustFields(engine('src/connectors/nexmark.rs'), /pub struct NexmarkSourceConfig \{/),
  'source:kafka': rustFields(engine('src/connectors/kafka/config/source.rs'), /pub struct KafkaSourceConfig \{/),
  'sink:kafka': rustFields(engine('src/connectors/kafka/config/sink.rs'), /pub struct KafkaSinkConfig \{/),
  'source:generator': rustFields(engine('src/connectors/generator.rs'), /\n    Sequence \{/, '\n    }'),
};

/** The checks of engine/src/plan/planner.rs that need no server: ids, edges, kinds, parallelism. */
function planProblems(spec: JobSpec): string[] {
  const out: string[] = [];
  const ids = spec.nodes.map((n) => n.id);
  const byId = new Map(spec.nodes.map((n) => [n.id, n]));
  for (const n of spec.nodes) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(n.id)) out.push(`node id ${n.id} is invalid`);
    if (ids.indexOf(n.id) !== ids.lastIndexOf(n.id)) out.push(`node id ${n.id} twice`);
    const p = n.parallelism ?? 1;
    if (p < 1 || p > (spec.settings?.max_parallelism ?? 128)) out.push(`node ${n.id}: parallelism ${p}`);
    const inputs = (spec.edges ?? []).filter((e) => e.to === n.id).length;
    const outputs = (spec.edges ?? []).filter((e) => e.from === n.id).length;
    if (n.kind === 'source' && (inputs > 0 || outputs === 0 || n.module || !n.connector)) out.push(`source ${n.id} is misshapen`);
    if (n.kind === 'sink' && (inputs === 0 || outputs > 0 || n.module || !n.connector)) out.push(`sink ${n.id} is misshapen`);
    if (n.kind === 'operator' && (inputs === 0 || n.connector || !n.module)) out.push(`operator ${n.id} is misshapen`);
    if (n.kind === 'operator' && !EMBEDDED.includes(n.module!)) out.push(`operator ${n.id}: no module ${n.module} in the binary`);
    if (n.kind !== 'operator') {
      const known = connectors(n.kind === 'source' ? 'source' : 'sink');
      if (!known.includes(n.connector!)) out.push(`node ${n.id}: connector ${n.connector} not one of ${known.join(', ')}`);
      const config = CONFIGS[`${n.kind}:${n.connector}`];
      const keys = Object.keys(n.config ?? {});
      if (!config) out.push(`node ${n.id}: no config known for ${n.kind} ${n.connector}`);
      else {
        const allowed = [...config.fields, ...(n.kind === 'source' ? COMMON_SOURCE : []), ...(n.connector === 'generator' ? ['mode'] : [])];
        for (const k of keys) if (!allowed.includes(k)) out.push(`node ${n.id}: config field ${k} unknown (known: ${allowed.join(', ')})`);
        for (const k of config.required) if (!keys.includes(k)) out.push(`node ${n.id}: config field ${k} missing`);
      }
    }
  }
  const seen = new Set<string>();
  for (const e of spec.edges ?? []) {
    const from = byId.get(e.from);
    const to = byId.get(e.to);
    if (!from || !to) out.push(`edge ${e.from} -> ${e.to}: unknown node`);
    if (seen.has(`${e.from}>${e.to}`)) out.push(`edge ${e.from} -> ${e.to} twice`);
    seen.add(`${e.from}>${e.to}`);
    const fp = from?.parallelism ?? 1;
    const tp = to?.parallelism ?? 1;
    const forward = (e.partitioning ?? (fp === tp ? 'forward' : 'rebalance')) === 'forward';
    if (forward && fp !== tp) out.push(`edge ${e.from} -> ${e.to}: forward ${fp} vs ${tp}`);
  }
  return out;
}

describe('templates', () => {
  const grant = { kafka: { connection: 'prod', topicPrefix: 'acme.' } };
  const all = TEMPLATES.flatMap((t) => [{ t, spec: t.build() }, ...(t.id === 'kafka' ? [{ t, spec: t.build(grant) }] : [])]);

  it('are the four asked for, each once', () => {
    expect(TEMPLATES.map((t) => t.id)).toEqual(['wordcount', 'nexmark', 'kafka', 'window']);
    expect(templateById('window')?.label).toBe('Tumbling window');
    expect(templateById('nope')).toBeUndefined();
  });

  it('all validate against the JobSpec schema of the bundled OpenAPI document', () => {
    for (const { t, spec } of all) expect(validate(spec, componentRef('JobSpec'), openapi), t.id).toEqual([]);
  });

  it('all pass the planner’s checks, with modules the binary embeds and configs their connectors read', () => {
    expect(EMBEDDED).toContain('builtin:tokenizer');
    expect(connectors('source')).toEqual(['generator', 'nexmark', 'stream', 'kafka']);
    expect(CONFIGS['source:stream']!.required).toEqual(['stream']);
    expect(CONFIGS['source:nexmark']!.required).toEqual(['count']);
    expect(CONFIGS['sink:kafka']!.required).toEqual(['topic']);
    expect(CONFIGS['source:generator']!.required).toEqual(['count']);
    for (const { t, spec } of all) expect(planProblems(spec), t.id).toEqual([]);
  });

  it('the word count reads `lines` and writes `counts` through tokenizer and wordcount, hashed by word', () => {
    const spec = templateById('wordcount')!.build();
    expect(spec.nodes.map((n) => [n.id, n.kind, n.module ?? n.connector])).toEqual([
      ['lines', 'source', 'stream'],
      ['split', 'operator', 'builtin:tokenizer'],
      ['count', 'operator', 'builtin:wordcount'],
      ['out', 'sink', 'stream'],
    ]);
    expect(spec.nodes[0]!.config).toEqual({ stream: 'lines', follow: true });
    expect(spec.nodes[3]!.config).toEqual({ stream: 'counts', partitions: 2 });
    expect(spec.edges!.find((e) => e.to === 'count')!.partitioning).toBe('hash');
  });

  it('the Kafka template names the tenant’s granted connection and topics', () => {
    const spec = templateById('kafka')!.build(grant);
    expect(spec.nodes[0]!.config).toMatchObject({ connection: 'prod', topics: ['acme.bids'] });
    expect(spec.nodes[2]!.config).toMatchObject({ connection: 'prod', topic: 'acme.bids-eur' });
    expect(templateById('kafka')!.build().nodes[0]!.config).toMatchObject({ connection: KAFKA_PLACEHOLDER.connection, topics: ['bids'] });
  });

  it('lists the builtin modules they run', () => {
    expect(templateModules()).toEqual(['builtin:nexmark-q1', 'builtin:tokenizer', 'builtin:tumbling-window', 'builtin:wordcount']);
  });
});
