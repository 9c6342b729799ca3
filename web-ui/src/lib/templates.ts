// Job templates of the "New job" page: complete specs to start from, each planned by the
// server as it is (engine/src/plan; connectors' configs as engine/src/connectors reads them).
// Pure.

import type { JobSpec } from '../api/types';

export type TemplateId = 'wordcount' | 'nexmark' | 'kafka' | 'window';

/** What a template is built with: the tenant's first Kafka grant, when it has one. */
export interface TemplateContext {
  kafka?: { connection: string; topicPrefix: string } | null;
}

export interface Template {
  id: TemplateId;
  label: string;
  /** One sentence: what the job does. */
  summary: string;
  /** What it needs before it runs, in a sentence. */
  needs: string;
  build: (ctx?: TemplateContext) => JobSpec;
}

/** The Kafka connection and topic prefix a template names when the tenant has no grant. */
export const KAFKA_PLACEHOLDER = { connection: 'main', topicPrefix: '' };

export const TEMPLATES: Template[] = [
  {
    id: 'wordcount',
    label: 'Word count over streams',
    summary: 'Lines pushed to stream `lines` are split into words and counted; each word’s running count goes to stream `counts`.',
    needs: 'Stream `lines` must exist (its records are lines of text); the sink creates `counts` with 2 partitions.',
    build: () => ({
      name: 'wordcount',
      nodes: [
        { id: 'lines', kind: 'source', connector: 'stream', parallelism: 1, config: { stream: 'lines', follow: true } },
        { id: 'split', kind: 'operator', module: 'builtin:tokenizer', parallelism: 2 },
        { id: 'count', kind: 'operator', module: 'builtin:wordcount', parallelism: 2 },
        { id: 'out', kind: 'sink', connector: 'stream', parallelism: 2, config: { stream: 'counts', partitions: 2 } },
      ],
      edges: [
        { from: 'lines', to: 'split', partitioning: 'rebalance' },
        { from: 'split', to: 'count', partitioning: 'hash' },
        { from: 'count', to: 'out', partitioning: 'forward' },
      ],
      settings: { checkpoint: { interval_ms: 1000 } },
    }),
  },
  {
    id: 'nexmark',
    label: 'Nexmark query 1',
    summary: 'Generated Nexmark bids, their prices converted to euros (query 1), written to stream `q1-bids-eur`.',
    needs: 'Nothing: the source generates its events (1,000 per second per subtask) and the sink creates its stream.',
    build: () => ({
      name: 'nexmark-q1',
      nodes: [
        {
          id: 'bids',
          kind: 'source',
          connector: 'nexmark',
          parallelism: 2,
          config: { event_type: 'bid', count: 1_000_000, records_per_second: 1000 },
        },
        { id: 'q1', kind: 'operator', module: 'builtin:nexmark-q1', parallelism: 2 },
        { id: 'out', kind: 'sink', connector: 'stream', parallelism: 1, config: { stream: 'q1-bids-eur', partitions: 1 } },
      ],
      edges: [
        { from: 'bids', to: 'q1', partitioning: 'forward' },
        { from: 'q1', to: 'out', partitioning: 'rebalance' },
      ],
      settings: { checkpoint: { interval_ms: 1000 } },
    }),
  },
  {
    id: 'kafka',
    label: 'Kafka in, Kafka out',
    summary:
      'Bids read as JSON from a Kafka topic, converted to euros (Nexmark query 1), written as JSON to another topic, exactly once.',
    needs:
      'A Kafka grant of the server’s admin: the connection and the topics’ prefix (your Account page lists them); the topics must exist.',
    build: (ctx) => {
      const { connection, topicPrefix } = ctx?.kafka ?? KAFKA_PLACEHOLDER;
      return {
        name: 'kafka-q1',
        nodes: [
          {
            id: 'bids',
            kind: 'source',
            connector: 'kafka',
            parallelism: 1,
            config: { connection, topics: [`${topicPrefix}bids`], start: 'earliest', value_format: 'json' },
          },
          { id: 'q1', kind: 'operator', module: 'builtin:nexmark-q1', parallelism: 1 },
          {
            id: 'bids-eur',
            kind: 'sink',
            connector: 'kafka',
            parallelism: 1,
            config: { connection, topic: `${topicPrefix}bids-eur`, delivery: 'exactly_once', value_format: 'json' },
          },
        ],
        edges: [
          { from: 'bids', to: 'q1', partitioning: 'forward' },
          { from: 'q1', to: 'bids-eur', partitioning: 'forward' },
        ],
        settings: { checkpoint: { interval_ms: 1000 } },
      };
    },
  },
  {
    id: 'window',
    label: 'Tumbling window',
    summary:
      'Generated numbers under 10 keys, counted and summed per key in 1-second event-time windows, written to stream `window-sums`.',
    needs: 'Nothing: the generator makes 100 records a second and the sink creates its stream.',
    build: () => ({
      name: 'tumbling-window',
      nodes: [
        {
          id: 'numbers',
          kind: 'source',
          connector: 'generator',
          parallelism: 1,
          config: { mode: 'sequence', count: 1_000_000, keys: 10, interval_ms: 10, out_of_orderness_ms: 0, records_per_second: 100 },
        },
        { id: 'window', kind: 'operator', module: 'builtin:tumbling-window', parallelism: 2, config: { size_ms: 1000 } },
        { id: 'out', kind: 'sink', connector: 'stream', parallelism: 1, config: { stream: 'window-sums', partitions: 1 } },
      ],
      edges: [
        { from: 'numbers', to: 'window', partitioning: 'hash' },
        { from: 'window', to: 'out', partitioning: 'rebalance' },
      ],
      settings: { checkpoint: { interval_ms: 1000 } },
    }),
  },
];

export function templateById(id: string): Template | undefined {
  return TEMPLATES.find((t) => t.id === id);
}

/** The `builtin:` modules the templates run, for the module choices. */
export function templateModules(): string[] {
  const names = new Set<string>();
  for (const t of TEMPLATES) {
    for (const n of t.build().nodes) if (n.module?.startsWith('builtin:')) names.add(n.module);
  }
  return [...names].sort();
}
