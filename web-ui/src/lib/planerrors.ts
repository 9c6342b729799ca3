// The server's refusals of a job spec (400s of `POST /api/v1/jobs`) mapped to the place in the
// spec they are about. The planner (engine/src/plan) and the admission checks before it name
// what is wrong in their messages: nodes by id in backticks ("node `count`: ..."), edges by
// their ends ("edge a -> b: unknown node `b`", "the edge `a` → `b` is listed more than once"),
// settings by their path ("settings: checkpoint.interval_ms must be at least 1",
// "settings.channel_capacity 17 is above this server's limit"), and serde's errors by line and
// column of the body. Pure.

import { pointerOf } from './jsonpos';

/** Where a refusal points: a JSON pointer into the spec, or a line and column of the body sent. */
export type PlanErrorPlace = { pointer: string } | { line: number; column: number };

interface SpecShape {
  nodes: { id?: unknown; config?: unknown; parallelism?: unknown; module?: unknown; inputs?: unknown; on_error?: unknown }[];
  edges: { from?: unknown; to?: unknown; partitioning?: unknown; input?: unknown; output?: unknown }[];
  settings: unknown;
  dead_letter: unknown;
}

/** The settings a spec has (`settings.<name>`), first path segments. */
const SETTINGS = [
  'max_parallelism',
  'channel_capacity_bytes',
  'channel_capacity',
  'cpu_limit_ms',
  'wall_limit_ms',
  'memory_limit_mb',
  'max_output_bytes_per_call',
  'checkpoint',
  'restart',
  'max_dead_letters_per_minute',
];

/** The id of the sink the job's dead-letter destination runs as (engine: `DEAD_LETTER_NODE`). */
const DEAD_LETTER_NODE = 'dead-letters';

function shape(spec: unknown): SpecShape {
  const s = (spec !== null && typeof spec === 'object' ? spec : {}) as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.map((x) => (x !== null && typeof x === 'object' ? x : {})) : []);
  return { nodes: list(s.nodes), edges: list(s.edges), settings: s.settings, dead_letter: s.dead_letter } as SpecShape;
}

function has(obj: unknown, key: string): boolean {
  return obj !== null && typeof obj === 'object' && !Array.isArray(obj) && Object.prototype.hasOwnProperty.call(obj, key);
}

/** Serde's `at line 3 column 7` at the end of a message, if any. */
export function serdePosition(message: string): { line: number; column: number } | null {
  const m = /at line (\d+) column (\d+)\s*$/.exec(message);
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}

/**
 * Where in `spec` (the spec that was sent) the server's refusal `message` points, or `null`
 * when it names nothing of it.
 */
export function planErrorPlace(message: string, spec: unknown): PlanErrorPlace | null {
  const msg = message.trim();
  const s = shape(spec);

  if (/^invalid (job spec|JSON body)\b/.test(msg)) {
    const at = serdePosition(msg);
    if (at) return at;
  }
  if (msg === 'the job has no nodes') return { pointer: '/nodes' };

  // `settings: <problem>` (the planner's checks) and `settings.<path> <n> is above this server's limit`.
  if (msg.startsWith('settings:') || msg.startsWith('settings.')) return { pointer: settingsPointer(msg, s) };

  let m = /^the job's (edge|channel) count/.exec(msg);
  if (m) return { pointer: '/edges' };

  m = /^node id `(.*?)` is (invalid|used by more than one node)/.exec(msg);
  if (m) {
    const all = s.nodes.map((n, i) => (n.id === m![1] ? i : -1)).filter((i) => i >= 0);
    const i = m[2] === 'invalid' ? all[0] : (all[1] ?? all[0]);
    return i === undefined ? { pointer: '/nodes' } : { pointer: pointerOf(['nodes', i, 'id']) };
  }

  m = /^edge (.*?) -> (.*?): unknown node `(.*?)`/.exec(msg);
  if (m) {
    const [, from, to, missing] = m;
    const i = edgeIndex(s, from!, to!);
    if (i === -1) return { pointer: '/edges' };
    return { pointer: pointerOf(['edges', i, missing === from ? 'from' : 'to']) };
  }
  m = /^edge (.*?) -> (.*?): forward partitioning/.exec(msg);
  if (m) {
    const i = edgeIndex(s, m[1]!, m[2]!);
    if (i === -1) return { pointer: '/edges' };
    return { pointer: pointerOf(has(s.edges[i], 'partitioning') ? ['edges', i, 'partitioning'] : ['edges', i]) };
  }
  m = /^the edge `(.*?)` → `(.*?)` is listed more than once/.exec(msg);
  if (m) {
    const all = s.edges.map((e, i) => (e.from === m![1] && e.to === m![2] ? i : -1)).filter((i) => i >= 0);
    const i = all[1] ?? all[0];
    return { pointer: i === undefined ? '/edges' : pointerOf(['edges', i]) };
  }

  m = /^the job graph has a cycle through node `(.*?)`/.exec(msg);
  if (m) {
    const i = nodeIndex(s, m[1]!);
    return { pointer: i === -1 ? '/nodes' : pointerOf(['nodes', i]) };
  }

  m = /^node `(.*?)`: ([\s\S]*)$/.exec(msg);
  if (m) return { pointer: nodePointer(m[1]!, m[2]!, s) };

  // A limit of a source's config (`node `x`: config.batch_bytes 8192 is above ...`) is a node
  // message too; anything else names no place.
  return null;
}

function nodeIndex(s: SpecShape, id: string): number {
  return s.nodes.findIndex((n) => n.id === id);
}

function edgeIndex(s: SpecShape, from: string, to: string): number {
  return s.edges.findIndex((e) => e.from === from && e.to === to);
}

/** The pointer of the setting a `settings` message names: the first it names that the spec has, else the first it names. */
function settingsPointer(msg: string, s: SpecShape): string {
  const paths = [...msg.matchAll(/[a-z_]+(?:\.[a-z_]+)*/g)]
    .map((x) => x[0].replace(/^settings\./, ''))
    .filter((p) => SETTINGS.includes(p.split('.')[0]!));
  const present = paths.find((p) => {
    let at: unknown = s.settings;
    for (const part of p.split('.')) {
      if (!has(at, part)) return false;
      at = (at as Record<string, unknown>)[part];
    }
    return true;
  });
  const path = present ?? paths[0];
  return path === undefined ? '/settings' : pointerOf(['settings', ...path.split('.')]);
}

/** The pointer of what a `node `id`: problem` message is about: a field of the node, or of an edge of it. */
function nodePointer(id: string, problem: string, s: SpecShape): string {
  const i = nodeIndex(s, id);
  if (i === -1) {
    // The dead-letter destination runs as a node of its own.
    if (id === DEAD_LETTER_NODE && has(s, 'dead_letter') && s.dead_letter) {
      return has(s.dead_letter, 'connector') && /connector/.test(problem) ? '/dead_letter/connector' : '/dead_letter';
    }
    return '/nodes';
  }
  const node = s.nodes[i]!;
  const at = (...rest: (string | number)[]) => pointerOf(['nodes', i, ...rest]);
  const field = (name: string) => (has(node, name) ? at(name) : at());

  // An edge of the node's (its inputs or side outputs).
  let m = /^the edge from `(.*?)` (?:names input|must name)/.exec(problem);
  if (m) {
    const e = edgeIndex(s, m[1]!, id);
    if (e !== -1) return pointerOf(has(s.edges[e], 'input') ? ['edges', e, 'input'] : ['edges', e]);
  }
  if (/side output|only operators have side outputs/.test(problem)) {
    const e = s.edges.findIndex((x) => x.from === id && has(x, 'output') && x.output != null);
    if (e !== -1) return pointerOf(['edges', e, 'output']);
  }
  if (/input `.*?` has (no|more than one) incoming edge|`inputs`|name their inputs|input name|is named twice/.test(problem)) {
    return field('inputs');
  }
  if (/^parallelism\b|\bparallelism must\b/.test(problem)) return field('parallelism');
  if (/on_error/.test(problem)) return field('on_error');
  if (/dead-letter destination/.test(problem)) return field('id');

  // A field of the wrong kind of node (`a source takes a `connector`, not a `module``), or one missing.
  m = /takes an? `(\w+)`, not an? `(\w+)`/.exec(problem);
  if (m) return field(m[2]!);
  m = /needs an? `(module|connector)`/.exec(problem);
  if (m) return field(m[1]!);
  // The module of an operator.
  if (/unknown module|\bmodule\b|component|world|compil/i.test(problem)) return field('module');
  // The connector, and its config.
  if (/^unknown (source|sink) connector/.test(problem)) return field('connector');
  m = /^config\.([A-Za-z0-9_]+)/.exec(problem);
  if (m) return configPointer(node, i, m[1]!);
  m = /(?:unknown|missing|duplicate) field `(.*?)`/.exec(problem);
  if (m) return configPointer(node, i, m[1]!);
  m = /^stream `.*?` does not exist|stream connector needs `stream`/.exec(problem);
  if (m) return configPointer(node, i, 'stream');
  // A config value out of range: `batch_size must be ...`, `kafka: `topics` ...`, `` `key` is not accepted``.
  const named = [...problem.matchAll(/`([A-Za-z0-9_]+)`|\b([a-z][a-z0-9_]*)\b/g)].map((x) => x[1] ?? x[2]!);
  const config = node.config;
  const key = named.find((k) => has(config, k));
  if (key) return at('config', key);
  if (/config|connector|kafka|stream|partitions|topic|connection|grant/i.test(problem)) return field('config');
  return at();
}

/**
 * The offset in `body` (the text that was sent) of serde's `line` and `column` (from 1; serde
 * counts a line's bytes of UTF-8): the last character it read.
 */
export function bodyOffset(body: string, line: number, column: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const nl = body.indexOf('\n', offset);
    if (nl === -1) return body.length;
    offset = nl + 1;
  }
  let bytes = 0;
  while (offset < body.length && body[offset] !== '\n') {
    const c = body.codePointAt(offset)!;
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (bytes >= column) return offset;
    offset += c > 0xffff ? 2 : 1;
  }
  return Math.max(0, offset - 1);
}

function configPointer(node: SpecShape['nodes'][number], i: number, key: string): string {
  if (has(node.config, key)) return pointerOf(['nodes', i, 'config', key]);
  return pointerOf(has(node, 'config') ? ['nodes', i, 'config'] : ['nodes', i]);
}
