// The spec editor of the "New job" page: its text checked as it is typed (JSON syntax, then
// the `JobSpec` schema of the server's OpenAPI document), the server's refusal placed at the
// line it is about, and the streams a spec needs. Pure.

import { locate, parseJson, pointerAt, positionAt, type JsonNode, type JsonValue } from './jsonpos';
import { componentRef, errorText, validate } from './jsonschema';
import { bodyOffset, planErrorPlace } from './planerrors';

/** A problem of the spec shown under the editor. */
export interface SpecProblem {
  /** Found by the JSON parser, the schema, or the server when the spec was submitted. */
  source: 'syntax' | 'schema' | 'server';
  /** Where it is (line and column from 1); `null` when the server's message names no place. */
  line: number | null;
  column: number | null;
  offset: number | null;
  /** The JSON pointer it is about (`null` for a syntax error, or no place). */
  pointer: string | null;
  /** What is wrong, for people: `nodes/2/parallelism must be an integer, not "x"`. */
  text: string;
}

export interface CheckedSpec {
  /** The parsed value, when the text is JSON. */
  value: JsonValue | null;
  root: JsonNode | null;
  problems: SpecProblem[];
}

/** Checks the editor's text: JSON, then (given the OpenAPI document) its `JobSpec` schema. */
export function checkSpec(text: string, openapi: unknown | null): CheckedSpec {
  const parsed = parseJson(text);
  if (!parsed.ok) {
    const e = parsed.error;
    return {
      value: null,
      root: null,
      problems: [{ source: 'syntax', line: e.line, column: e.column, offset: e.offset, pointer: null, text: e.message }],
    };
  }
  const problems: SpecProblem[] = [];
  if (openapi) {
    for (const e of validate(parsed.value, componentRef('JobSpec'), openapi)) {
      const at = positionAt(text, locate(parsed.node, e.pointer).offset);
      problems.push({ source: 'schema', line: at.line, column: at.column, offset: at.offset, pointer: e.pointer, text: errorText(e) });
    }
  }
  problems.sort((a, b) => (a.offset ?? 0) - (b.offset ?? 0));
  return { value: parsed.value, root: parsed.node, problems };
}

/**
 * The server's refusal of the spec in `text` (sent as `body`, the JSON the client made of it)
 * as a problem at the line it names: a node, edge or setting named in the message, or the
 * line and column of the body serde gave.
 */
export function serverProblem(message: string, text: string, body: string): SpecProblem {
  const none: SpecProblem = { source: 'server', line: null, column: null, offset: null, pointer: null, text: message };
  const parsed = parseJson(text);
  if (!parsed.ok) return none;
  const place = planErrorPlace(message, parsed.value);
  if (!place) return none;
  let pointer: string;
  if ('pointer' in place) {
    pointer = place.pointer;
  } else {
    const sent = parseJson(body);
    if (!sent.ok) return none;
    pointer = pointerAt(sent.node, bodyOffset(body, place.line, place.column));
  }
  const found = locate(parsed.node, pointer);
  const at = positionAt(text, found.offset);
  return { ...none, line: at.line, column: at.column, offset: at.offset, pointer: found.pointer };
}

/** A stream a spec reads or writes. */
export interface StreamUse {
  stream: string;
  /** The node (`dead-letters` for the job's dead-letter destination). */
  node: string;
  role: 'source' | 'sink';
  /** A sink's `partitions`: it creates the stream with them when it does not exist. */
  partitions: number | null;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The streams of a spec's `stream` sources and sinks (and its dead-letter destination). */
export function streamUses(spec: unknown): StreamUse[] {
  if (!isObj(spec)) return [];
  const out: StreamUse[] = [];
  const add = (node: string, role: 'source' | 'sink', config: unknown) => {
    if (!isObj(config) || typeof config.stream !== 'string' || !config.stream) return;
    const p = config.partitions;
    out.push({ stream: config.stream, node, role, partitions: typeof p === 'number' && Number.isInteger(p) && p > 0 ? p : null });
  };
  for (const n of Array.isArray(spec.nodes) ? spec.nodes : []) {
    if (!isObj(n) || n.connector !== 'stream' || (n.kind !== 'source' && n.kind !== 'sink')) continue;
    add(typeof n.id === 'string' ? n.id : '?', n.kind, n.config);
  }
  const dl = spec.dead_letter;
  if (isObj(dl) && dl.connector === 'stream') add('dead-letters', 'sink', dl.config);
  return out;
}

/**
 * The streams of `uses` that do not exist yet: `missing` must be created before the job is
 * submitted (the server refuses it otherwise); `created` are written by a sink that gives
 * `partitions`, which the server creates when the job is.
 */
export function missingStreams(uses: StreamUse[], existing: string[]): { missing: StreamUse[]; created: StreamUse[] } {
  const have = new Set(existing);
  const missing: StreamUse[] = [];
  const created: StreamUse[] = [];
  // In spec order, as the server admits the nodes: a sink that creates its stream makes it
  // exist for the nodes after it.
  for (const u of uses) {
    if (have.has(u.stream)) continue;
    have.add(u.stream);
    if (u.role === 'sink' && u.partitions !== null) created.push(u);
    else missing.push(u);
  }
  return { missing, created };
}
