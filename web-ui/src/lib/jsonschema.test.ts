import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { componentRef, describe as describeSchema, errorText, resolveRef, validate, type Schema } from './jsonschema';

/** The OpenAPI document bundled with the UI (what the server serves at /api/v1/openapi.json). */
const openapi: unknown = JSON.parse(readFileSync(new URL('../api/openapi.json', import.meta.url), 'utf8'));
const JOB = componentRef('JobSpec');

function wordcount(): Record<string, any> {
  return {
    name: 'wordcount',
    nodes: [
      { id: 'lines', kind: 'source', connector: 'stream', config: { stream: 'lines', follow: true } },
      { id: 'split', kind: 'operator', module: 'builtin:tokenizer', parallelism: 2 },
      { id: 'count', kind: 'operator', module: 'builtin:wordcount', parallelism: 2 },
      { id: 'out', kind: 'sink', connector: 'stream', parallelism: 2, config: { stream: 'counts', partitions: 2 } },
    ],
    edges: [
      { from: 'lines', to: 'split', partitioning: 'rebalance' },
      { from: 'split', to: 'count', partitioning: 'hash' },
      { from: 'count', to: 'out', partitioning: 'forward' },
    ],
    settings: { checkpoint: { interval_ms: 500, mode: 'aligned' }, restart: { strategy: 'fixed', attempts: 3 } },
    dead_letter: { connector: 'stream', config: { stream: 'dead' } },
  };
}

const check = (spec: unknown) => validate(spec, JOB, openapi);

describe('validate against the JobSpec schema of the OpenAPI document', () => {
  it('accepts a whole spec, and the smallest one', () => {
    expect(check(wordcount())).toEqual([]);
    expect(check({ nodes: [] })).toEqual([]);
    const nulls = wordcount();
    nulls.settings.checkpoint.interval_ms = null;
    nulls.dead_letter = null;
    nulls.edges[0].partitioning = null;
    expect(check(nulls)).toEqual([]);
  });

  it('says what is wrong with a value, where', () => {
    const s = wordcount();
    s.nodes[1].parallelism = 'x';
    s.nodes[2].parallelism = -1;
    s.nodes[3].parallelism = 1.5;
    expect(check(s)).toEqual([
      { pointer: '/nodes/1/parallelism', message: 'must be an integer, not "x"' },
      { pointer: '/nodes/2/parallelism', message: 'must be ≥ 0, not -1' },
      { pointer: '/nodes/3/parallelism', message: 'must be an integer, not 1.5' },
    ]);
    expect(errorText(check(s)[0]!)).toBe('nodes/1/parallelism must be an integer, not "x"');
  });

  it('names missing and unknown fields, with the likely one meant', () => {
    const s = wordcount();
    delete s.nodes[0].kind;
    s.nodes[1].paralelism = 3;
    s.settings.checkpoint.intervall = 5;
    s.settings.zzz = 1;
    expect(check(s)).toEqual([
      { pointer: '/nodes/0', message: 'needs `kind`' },
      { pointer: '/nodes/1/paralelism', message: 'is not a field here (did you mean `parallelism`?)' },
      { pointer: '/settings/checkpoint/intervall', message: 'is not a field here (did you mean `interval_ms`?)' },
      {
        pointer: '/settings/zzz',
        message: expect.stringMatching(/^is not a field here \(the fields are `channel_capacity`, .* or `wall_limit_ms`\)$/),
      },
    ]);
    expect(check({})).toEqual([{ pointer: '', message: 'needs `nodes`' }]);
    expect(errorText({ pointer: '', message: 'needs `nodes`' })).toBe('the spec needs `nodes`');
  });

  it('explains a value that fits none of the alternatives', () => {
    const s = wordcount();
    s.edges[1].partitioning = 'hashed';
    s.nodes[0].kind = 'input';
    s.settings.checkpoint.mode = 3;
    s.settings.checkpoint.interval_ms = '1000';
    expect(check(s)).toEqual([
      { pointer: '/nodes/0/kind', message: 'must be one of "source", "operator" or "sink", not "input"' },
      { pointer: '/edges/1/partitioning', message: 'must be null or one of "forward", "hash", "broadcast" or "rebalance", not "hashed"' },
      { pointer: '/settings/checkpoint/interval_ms', message: 'must be an integer or null, not "1000"' },
      { pointer: '/settings/checkpoint/mode', message: 'must be one of "aligned" or "unaligned", not 3' },
    ]);
  });

  it('checks inside the alternative that applies', () => {
    const s = wordcount();
    s.dead_letter = { config: {} };
    s.settings.checkpoint = 'often';
    s.settings.restart = { attempts: 'many' };
    expect(check(s)).toEqual([
      { pointer: '/settings/checkpoint', message: 'must be an object, not "often"' },
      { pointer: '/settings/restart/attempts', message: 'must be an integer or null, not "many"' },
      { pointer: '/dead_letter', message: 'needs `connector`' },
    ]);
  });

  it('checks the kinds of the containers', () => {
    expect(check({ nodes: {} })).toEqual([{ pointer: '/nodes', message: 'must be an array, not an object' }]);
    expect(check({ nodes: [5] })).toEqual([{ pointer: '/nodes/0', message: 'must be an object, not 5' }]);
    expect(check([])).toEqual([{ pointer: '', message: 'must be an object, not an array' }]);
    expect(check({ nodes: [], name: 'a very long name that goes on and on' })).toEqual([]);
    expect(check({ nodes: [], name: ['x'] })).toEqual([{ pointer: '/name', message: 'must be a string, not an array' }]);
  });
});

describe('validate, keyword by keyword', () => {
  const v = (value: unknown, schema: Schema, doc?: unknown) => validate(value, schema, doc).map((e) => `${e.pointer} ${e.message}`);

  it('types, one or several', () => {
    expect(v(1, { type: 'integer' })).toEqual([]);
    expect(v(1.5, { type: 'number' })).toEqual([]);
    expect(v(true, { type: ['string', 'null'] })).toEqual([' must be a string or null, not true']);
    expect(v(null, { type: 'string', nullable: true })).toEqual([]);
    expect(v(1, false)).toEqual([' is not allowed here']);
    expect(v(1, true)).toEqual([]);
  });
  it('enum, const, bounds, lengths, pattern', () => {
    expect(v('b', { enum: ['a'] })).toEqual([' must be "a", not "b"']);
    expect(v(2, { const: 1 })).toEqual([' must be 1, not 2']);
    expect(v({ a: [1] }, { enum: [{ a: [1] }] })).toEqual([]);
    expect(v(5, { minimum: 1, maximum: 4 })).toEqual([' must be ≤ 4, not 5']);
    expect(v(1, { exclusiveMinimum: 1, exclusiveMaximum: 1 })).toEqual([' must be > 1, not 1', ' must be < 1, not 1']);
    expect(v('', { minLength: 1 })).toEqual([' must not be empty']);
    expect(v('abcd', { maxLength: 3, pattern: '^a+$' })).toEqual([' must be at most 3 characters long, not 4', ' must match the pattern ^a+$']);
  });
  it('arrays: items, prefix items, counts', () => {
    expect(v([1, 'x', 'y'], { prefixItems: [{ type: 'integer' }], items: { type: 'integer' } })).toEqual([
      '/1 must be an integer, not "x"',
      '/2 must be an integer, not "y"',
    ]);
    expect(v([], { minItems: 1 })).toEqual([' needs at least 1 item']);
    expect(v([1, 2], { maxItems: 1 })).toEqual([' may have at most 1 items, not 2']);
  });
  it('objects: additional properties as a schema', () => {
    expect(v({ a: 1, b: 'x' }, { properties: { a: {} }, additionalProperties: { type: 'integer' } })).toEqual(['/b must be an integer, not "x"']);
    expect(v({ a: 1 }, { additionalProperties: false })).toEqual(['/a is not a field here (this object has no fields)']);
  });
  it('allOf, anyOf, oneOf', () => {
    expect(v(5, { allOf: [{ minimum: 6 }, { maximum: 4 }] })).toEqual([' must be ≥ 6, not 5', ' must be ≤ 4, not 5']);
    expect(v(5, { anyOf: [{ type: 'integer' }, { type: 'number' }] })).toEqual([]);
    expect(v(5, { oneOf: [{ type: 'integer' }, { type: 'number' }] })).toEqual([' fits more than one of its alternatives']);
    expect(v('x', { oneOf: [{ type: 'integer' }, { enum: ['a', 'b'] }] })).toEqual([' must be an integer or one of "a" or "b", not "x"']);
    // The branch of the value's kind is the one whose errors count.
    expect(v({ a: 'x' }, { oneOf: [{ type: 'null' }, { type: 'object', properties: { a: { type: 'integer' } } }] })).toEqual([
      '/a must be an integer, not "x"',
    ]);
  });
  it('$ref: into the document, siblings applied, cycles and unknown targets harmless', () => {
    const doc = { defs: { n: { type: 'integer' }, loop: { $ref: '#/defs/loop' } } };
    expect(v('x', { $ref: '#/defs/n' }, doc)).toEqual([' must be an integer, not "x"']);
    expect(v(0, { $ref: '#/defs/n', minimum: 1 }, doc)).toEqual([' must be ≥ 1, not 0']);
    expect(v(1, { $ref: '#/defs/loop' }, doc)).toEqual([]);
    expect(v(1, { $ref: '#/defs/none' }, doc)).toEqual([]);
    expect(resolveRef(doc, '#/defs/n')).toEqual({ type: 'integer' });
    expect(resolveRef(doc, 'http://elsewhere')).toBeUndefined();
    expect(describeSchema({ $ref: '#/defs/n' }, doc)).toBe('an integer');
  });
});
