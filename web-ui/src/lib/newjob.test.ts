import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkSpec, missingStreams, serverProblem, streamUses } from './newjob';
import { specText } from './specform';
import { templateById } from './templates';

const openapi: unknown = JSON.parse(readFileSync(new URL('../api/openapi.json', import.meta.url), 'utf8'));
const wordcount = () => templateById('wordcount')!.build() as unknown as Record<string, any>;

/** The line (from 1) of the first occurrence of `needle` in `text`, after `from`. */
const lineOf = (text: string, needle: string, from = 0) => text.slice(0, text.indexOf(needle, from)).split('\n').length;

describe('checkSpec', () => {
  it('finds nothing wrong with a template', () => {
    const c = checkSpec(specText(wordcount()), openapi);
    expect(c.problems).toEqual([]);
    expect(c.value).toEqual(wordcount());
  });

  it('puts a schema error at the line of the field', () => {
    const text = specText(wordcount()).replace('"parallelism": 2', '"parallelism": "x"');
    const c = checkSpec(text, openapi);
    expect(c.problems).toEqual([
      {
        source: 'schema',
        line: lineOf(text, '"parallelism": "x"'),
        column: 7,
        offset: text.indexOf('"parallelism": "x"'),
        pointer: '/nodes/1/parallelism',
        text: 'nodes/1/parallelism must be an integer, not "x"',
      },
    ]);
  });

  it('puts a missing field at its object, and sorts problems by place', () => {
    const s = wordcount();
    s.edges[2].partitioning = 'sideways';
    delete s.nodes[3].kind;
    const text = specText(s);
    const c = checkSpec(text, openapi);
    expect(c.problems.map((p) => [p.line, p.pointer])).toEqual([
      [lineOf(text, '"id": "out"') - 1, '/nodes/3'],
      [lineOf(text, '"sideways"'), '/edges/2/partitioning'],
    ]);
  });

  it('gives a syntax error its line and column, and no value', () => {
    const text = '{\n  "name": "x"\n  "nodes": []\n}';
    const c = checkSpec(text, openapi);
    expect(c.value).toBeNull();
    expect(c.problems).toEqual([
      {
        source: 'syntax',
        line: 3,
        column: 3,
        offset: 18,
        pointer: null,
        text: expect.stringMatching(/^expected `,` or `}` after the value of "name"/),
      },
    ]);
  });

  it('checks only the syntax until the schema is there', () => {
    expect(checkSpec('{"nodes": 5}', null).problems).toEqual([]);
    expect(checkSpec('{"nodes": 5}', openapi).problems).toHaveLength(1);
  });
});

describe('serverProblem', () => {
  it('puts a planner refusal at the line of the field it names', () => {
    const s = wordcount();
    s.edges[1].to = 'nowhere';
    const text = specText(s);
    const p = serverProblem('edge split -> nowhere: unknown node `nowhere`', text, JSON.stringify(s));
    expect(p).toMatchObject({ source: 'server', pointer: '/edges/1/to', line: lineOf(text, '"to": "nowhere"') });
    expect(p.text).toBe('edge split -> nowhere: unknown node `nowhere`');
  });

  it('puts a missing stream at its node’s config', () => {
    const text = specText(wordcount());
    const message = 'node `lines`: stream `lines` does not exist; create it first (POST /api/v1/streams)';
    const p = serverProblem(message, text, JSON.stringify(wordcount()));
    expect(p).toMatchObject({ pointer: '/nodes/0/config/stream', line: lineOf(text, '"stream": "lines"') });
  });

  it('maps serde’s line and column in the body sent to the line in the editor', () => {
    const s = wordcount();
    s.nodes[2].parallelism = 1.5;
    const text = specText(s);
    const body = JSON.stringify(s);
    const column = body.indexOf('1.5') + 3;
    const message = `invalid job spec: invalid JSON body: invalid type: floating point \`1.5\`, expected u32 at line 1 column ${column}`;
    const p = serverProblem(message, text, body);
    expect(p).toMatchObject({ pointer: '/nodes/2/parallelism', line: lineOf(text, '"parallelism": 1.5') });
  });

  it('keeps a message that names no place, without a line', () => {
    const text = specText(wordcount());
    expect(serverProblem('allow_non_restored_state goes with from_savepoint', text, '{}')).toEqual({
      source: 'server',
      line: null,
      column: null,
      offset: null,
      pointer: null,
      text: 'allow_non_restored_state goes with from_savepoint',
    });
    expect(serverProblem('node `a`: x', 'not json', '{}').line).toBeNull();
  });

  it('falls back to the nearest line there is', () => {
    const text = specText(wordcount());
    const p = serverProblem("settings.channel_capacity 17 is above this server's limit of 16 (plan_limits.max_channel_capacity)", text, '{}');
    expect(p).toMatchObject({ pointer: '/settings', line: lineOf(text, '"settings"') });
  });
});

describe('streams a spec needs', () => {
  it('lists the stream sources and sinks, and the dead-letter destination', () => {
    const s = wordcount();
    s.dead_letter = { connector: 'stream', config: { stream: 'dead' } };
    s.nodes.push({ id: 'k', kind: 'sink', connector: 'kafka', config: { topic: 't' } });
    expect(streamUses(s)).toEqual([
      { stream: 'lines', node: 'lines', role: 'source', partitions: null },
      { stream: 'counts', node: 'out', role: 'sink', partitions: 2 },
      { stream: 'dead', node: 'dead-letters', role: 'sink', partitions: null },
    ]);
    expect(streamUses(null)).toEqual([]);
    expect(streamUses({ nodes: [{ kind: 'source', connector: 'stream', config: { stream: 5 } }] })).toEqual([]);
  });

  it('tells the streams to create first from those the job creates', () => {
    const uses = streamUses(wordcount());
    expect(missingStreams(uses, [])).toEqual({
      missing: [{ stream: 'lines', node: 'lines', role: 'source', partitions: null }],
      created: [{ stream: 'counts', node: 'out', role: 'sink', partitions: 2 }],
    });
    expect(missingStreams(uses, ['lines', 'counts'])).toEqual({ missing: [], created: [] });
    // A source after the sink that creates its stream finds it there; one before does not.
    const loop = [
      { stream: 'x', node: 'w', role: 'sink' as const, partitions: 1 },
      { stream: 'x', node: 'r', role: 'source' as const, partitions: null },
    ];
    expect(missingStreams(loop, [])).toEqual({ missing: [], created: [loop[0]] });
    expect(missingStreams([...loop].reverse(), [])).toEqual({ missing: [loop[1]], created: [] });
  });
});
