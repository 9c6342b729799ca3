import { describe, expect, it } from 'vitest';
import { bodyOffset, planErrorPlace, serdePosition } from './planerrors';

/** A spec with a bit of everything the messages name. */
const spec = {
  name: 'wordcount',
  nodes: [
    { id: 'lines', kind: 'source', connector: 'stream', config: { stream: 'lines', batch_size: 0 } },
    { id: 'split', kind: 'operator', module: 'builtin:tokenizer', parallelism: 0 },
    { id: 'count', kind: 'operator', module: 'nope', parallelism: 2, on_error: 'drop' },
    { id: 'j', kind: 'operator', module: 'builtin:join', inputs: ['left', 'right'] },
    { id: 'out', kind: 'sink', connector: 'kafka', config: { connection: 'main', topic: 'a b', brokers: {} } },
    { id: 'split', kind: 'operator', module: 'builtin:wordcount' },
    { id: 'bare', kind: 'operator' },
  ],
  edges: [
    { from: 'lines', to: 'split', partitioning: 'forward' },
    { from: 'split', to: 'count' },
    { from: 'split', to: 'nowhere' },
    { from: 'count', to: 'j', input: 'middle' },
    { from: 'count', to: 'out', output: 'late' },
    { from: 'split', to: 'count' },
  ],
  settings: { max_parallelism: 0, checkpoint: { interval_ms: 0, mode: 'unaligned', max_concurrent: 2 }, restart: { max_delay_ms: 10 } },
  dead_letter: { connector: 'generator' },
};

const at = (message: string, s: unknown = spec) => {
  const place = planErrorPlace(message, s);
  return place && 'pointer' in place ? place.pointer : place;
};

describe('planErrorPlace: the planner’s messages', () => {
  it('node ids', () => {
    expect(at('node id `split` is used by more than one node')).toBe('/nodes/5/id');
    expect(at('node id `lines` is invalid: use 1 to 64 characters of A-Z, a-z, 0-9, `_` or `-`')).toBe('/nodes/0/id');
    expect(at('the job has no nodes')).toBe('/nodes');
    expect(at('the job graph has a cycle through node `count`; jobs must be acyclic')).toBe('/nodes/2');
  });

  it('edges, by their ends', () => {
    expect(at('edge split -> nowhere: unknown node `nowhere`')).toBe('/edges/2/to');
    expect(at('edge ghost -> split: unknown node `ghost`', { nodes: [], edges: [{ from: 'a', to: 'b' }, { from: 'ghost', to: 'split' }] })).toBe(
      '/edges/1/from',
    );
    expect(at('edge x -> y: unknown node `x`')).toBe('/edges');
    expect(at('edge lines -> split: forward partitioning needs equal parallelism (1 vs 0); use rebalance or hash')).toBe(
      '/edges/0/partitioning',
    );
    expect(at('edge split -> count: forward partitioning needs equal parallelism (0 vs 2); use rebalance or hash')).toBe('/edges/1');
    expect(at('the edge `split` → `count` is listed more than once (one edge carries every record)')).toBe('/edges/5');
  });

  it('a node’s fields', () => {
    expect(at('node `split`: parallelism must be between 1 and max_parallelism (128), got 0')).toBe('/nodes/1/parallelism');
    expect(at('node `j`: parallelism must be between 1 and max_parallelism (128), got 0')).toBe('/nodes/3');
    expect(at('node `count`: unknown module `nope`: upload it first (POST /api/v1/modules), or use a module id or builtin:<name>')).toBe(
      '/nodes/2/module',
    );
    expect(at('node `split`: unknown module `builtin:nope` (builtin modules: tokenizer, wordcount)')).toBe('/nodes/1/module');
    expect(at('node `bare`: an operator needs a `module`')).toBe('/nodes/6');
    expect(at('node `lines`: a source takes a `connector`, not a `module`')).toBe('/nodes/0');
    expect(at('node `count`: an operator takes a `module`, not a `connector`')).toBe('/nodes/2');
    expect(at('node `out`: a sink takes a `connector`, not a `module`', { nodes: [{ id: 'out', module: 'm' }] })).toBe('/nodes/0/module');
    expect(at('node `lines`: unknown source connector `stream` (known: generator, nexmark, file, stream, kafka)')).toBe('/nodes/0/connector');
    expect(at('node `lines`: a source cannot have inputs')).toBe('/nodes/0');
    expect(at("node `count`: `on_error: drop` is not for a operator node; it takes fail, skip, dead_letter")).toBe('/nodes/2/on_error');
  });

  it('inputs and side outputs, at the edge that names them', () => {
    expect(at('node `j`: the edge from `count` names input `middle`, which is not one of its inputs ["left", "right"]')).toBe('/edges/3/input');
    expect(at('node `j`: input `right` has no incoming edge')).toBe('/nodes/3/inputs');
    expect(at('node `count`: only operators have side outputs (an edge\'s `output`)')).toBe('/edges/4/output');
  });

  it('connectors’ config, down to the field when it is there', () => {
    expect(at('node `lines`: batch_size must be an integer from 1 to 1000000, got 0')).toBe('/nodes/0/config/batch_size');
    expect(at('node `lines`: stream `lines` does not exist; create it first (POST /api/v1/streams)')).toBe('/nodes/0/config/stream');
    expect(at('node `lines`: invalid config for connector `stream`: unknown field `follw`, expected one of `stream`, `follow`')).toBe(
      '/nodes/0/config',
    );
    expect(at('node `lines`: invalid config for connector `stream`: unknown field `batch_size`, expected `stream`')).toBe(
      '/nodes/0/config/batch_size',
    );
    expect(at('node `out`: kafka: topic `a b` is not a Kafka topic name: 1 to 249 of A-Z a-z 0-9 . _ -')).toBe('/nodes/4/config/topic');
    expect(at('node `out`: `brokers` is not accepted: name a connection; the server connects only to the connections its admin configured')).toBe(
      '/nodes/4/config/brokers',
    );
    expect(at('node `lines`: config.batch_bytes 8192 is above this server\'s limit of 4096 (plan_limits.max_batch_bytes)')).toBe('/nodes/0/config');
    expect(at('node `lines`: config.batch_size 9000 is above this server\'s limit of 8192 (plan_limits.max_batch_size)')).toBe(
      '/nodes/0/config/batch_size',
    );
  });

  it('the dead-letter destination', () => {
    expect(at("node `dead-letters`: the dead-letter destination's connector is `stream` or `kafka` (or `file` locally), got `generator`")).toBe(
      '/dead_letter/connector',
    );
  });

  it('settings, by their path', () => {
    expect(at('settings: checkpoint.interval_ms must be at least 1 (or null)')).toBe('/settings/checkpoint/interval_ms');
    expect(at('settings: max_parallelism must be between 1 and 32768, got 0')).toBe('/settings/max_parallelism');
    expect(at('settings: settings.restart.max_delay_ms (10) is below initial_delay_ms (1000)')).toBe('/settings/restart/max_delay_ms');
    expect(
      at(
        'settings: unaligned checkpoints (checkpoint.mode `unaligned`, or checkpoint.aligned_timeout_ms) need ' +
          'checkpoint.max_concurrent 1, got 2: a task takes one checkpoint at a time',
      ),
    ).toBe('/settings/checkpoint/mode');
    // Not in the spec: where it would be (the editor shows its nearest ancestor).
    expect(at("settings.channel_capacity 17 is above this server's limit of 16 (plan_limits.max_channel_capacity)")).toBe(
      '/settings/channel_capacity',
    );
    expect(at('settings: something else entirely')).toBe('/settings');
    expect(at("the job's edge count 300 is above this server's limit of 256 (plan_limits.max_edges)")).toBe('/edges');
  });

  it('serde’s line and column, and nothing for a message that names nothing', () => {
    expect(planErrorPlace('invalid job spec: invalid JSON body: invalid type: string "x", expected u32 at line 1 column 45', spec)).toEqual({
      line: 1,
      column: 45,
    });
    expect(at('allow_non_restored_state goes with from_savepoint')).toBeNull();
    expect(at('node `ghost`: something')).toBe('/nodes');
    expect(at('node `lines`: something', null)).toBe('/nodes');
    expect(serdePosition('expected value at line 3 column 7')).toEqual({ line: 3, column: 7 });
    expect(serdePosition('no position')).toBeNull();
  });
});

describe('bodyOffset', () => {
  it('finds serde’s column, which counts bytes of UTF-8', () => {
    const body = '{"name":"é","nodes":[{"id":"a","parallelism":"x"}]}';
    // serde reports the last byte it read: the closing quote of "x".
    const column = new TextEncoder().encode(body.slice(0, body.indexOf('"x"') + 3)).length;
    expect(bodyOffset(body, 1, column)).toBe(body.indexOf('"x"') + 2);
    expect(bodyOffset('ab\ncd', 2, 2)).toBe(4);
    expect(bodyOffset('ab', 5, 1)).toBe(2);
    expect(bodyOffset('ab', 1, 99)).toBe(1);
  });
});
