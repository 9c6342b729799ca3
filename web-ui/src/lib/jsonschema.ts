// A small JSON Schema validator for the subset utoipa writes into the server's OpenAPI
// document: `$ref` (into the same document), `type` (one or several, `null` among them),
// `properties`, `required`, `additionalProperties`, `enum`, `const`, `items`, `prefixItems`,
// `oneOf` / `anyOf` / `allOf`, `minimum` / `maximum` (and the exclusive ones), lengths, item
// counts, `pattern`; `format`, `default` and `description` are ignored. Errors are
// `{ pointer, message }`, the pointer being where in the value the problem is. Pure.

import { pointerOf, pointerTokens } from './jsonpos';

export type Schema = boolean | SchemaObject;

export interface SchemaObject {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: Schema;
  enum?: unknown[];
  const?: unknown;
  items?: Schema;
  prefixItems?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  /** OpenAPI 3.0's way of allowing null. */
  nullable?: boolean;
  [keyword: string]: unknown;
}

/** A value that does not fit its schema: where (a JSON pointer into the value), and how. */
export interface SchemaError {
  pointer: string;
  message: string;
}

/**
 * An error while checking, and whether it says the value is of another kind than the schema
 * wants right at this place (a wrong type, not in the enum): a `oneOf` branch with such an
 * error does not apply to the value, one with only deeper errors does.
 */
interface Issue extends SchemaError {
  shallow: boolean;
}

/** `$ref`s followed in a row before giving up (a schema that refers to itself). */
const MAX_REFS = 64;

/** A schema that refers to component `name` of an OpenAPI document. */
export function componentRef(name: string): Schema {
  return { $ref: `#/components/schemas/${name}` };
}

/** The schema a local `$ref` (`#/components/schemas/X`) names in `document`, if any. */
export function resolveRef(document: unknown, ref: string): Schema | undefined {
  if (!ref.startsWith('#')) return undefined;
  let at: unknown = document;
  for (const token of pointerTokens(decodeURIComponent(ref.slice(1)))) {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[token];
  }
  return typeof at === 'boolean' || (at !== null && typeof at === 'object' && !Array.isArray(at)) ? (at as Schema) : undefined;
}

/** Every way `value` does not fit `schema` (`$ref`s resolved in `document`), in document order. */
export function validate(value: unknown, schema: Schema, document: unknown = schema): SchemaError[] {
  return check(value, schema, [], document, 0).map(({ pointer, message }) => ({ pointer, message }));
}

/** A JSON value's type, as JSON Schema names them (integers are numbers here). */
function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

function hasType(v: unknown, type: string): boolean {
  if (type === 'integer') return typeof v === 'number' && Number.isInteger(v);
  if (type === 'number') return typeof v === 'number' && Number.isFinite(v);
  return typeOf(v) === type;
}

const TYPE_NAMES: Record<string, string> = {
  null: 'null',
  boolean: 'true or false',
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  array: 'an array',
  object: 'an object',
};

/** A value as a message shows it: short ones as JSON, others by their kind. */
export function shown(v: unknown): string {
  if (typeof v === 'string') return v.length <= 24 ? JSON.stringify(v) : 'a string';
  if (Array.isArray(v)) return 'an array';
  if (v !== null && typeof v === 'object') return 'an object';
  return String(v);
}

/** `a`, `a or b`, `a, b or c`. */
function either(items: string[]): string {
  const unique = [...new Set(items)];
  return unique.length <= 1 ? (unique[0] ?? '') : `${unique.slice(0, -1).join(', ')} or ${unique[unique.length - 1]}`;
}

function check(value: unknown, schema: Schema, at: string[], document: unknown, refs: number): Issue[] {
  if (schema === true) return [];
  const pointer = pointerOf(at);
  if (schema === false) return [{ pointer, message: 'is not allowed here', shallow: true }];
  const issues: Issue[] = [];

  if (schema.$ref !== undefined) {
    const target = refs < MAX_REFS ? resolveRef(document, schema.$ref) : undefined;
    // An unknown reference checks nothing (the document, not the value, is wrong).
    if (target !== undefined) issues.push(...check(value, target, at, document, refs + 1));
  }

  if (schema.nullable === true && value === null) return issues;

  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(value, t))) {
      issues.push({ pointer, message: `must be ${either(types.map((t) => TYPE_NAMES[t] ?? t))}, not ${shown(value)}`, shallow: true });
      return issues;
    }
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => sameJson(e, value))) {
    issues.push({ pointer, message: `${enumText(schema.enum)}, not ${shown(value)}`, shallow: true });
  }
  if ('const' in schema && !sameJson(schema.const, value)) {
    issues.push({ pointer, message: `must be ${JSON.stringify(schema.const)}, not ${shown(value)}`, shallow: true });
  }

  if (typeof value === 'number') issues.push(...bounds(value, schema, pointer));
  if (typeof value === 'string') issues.push(...lengths(value, schema, pointer));
  if (Array.isArray(value)) issues.push(...arrayIssues(value, schema, at, document, refs));
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    issues.push(...objectIssues(value as Record<string, unknown>, schema, at, document, refs));
  }

  if (schema.allOf) {
    for (const s of schema.allOf) issues.push(...check(value, s, at, document, refs));
  }
  if (schema.anyOf) issues.push(...alternatives(value, schema.anyOf, at, document, refs, false));
  if (schema.oneOf) issues.push(...alternatives(value, schema.oneOf, at, document, refs, true));
  return issues;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

function enumText(values: unknown[]): string {
  const shownValues = values.map((v) => JSON.stringify(v));
  return shownValues.length === 1 ? `must be ${shownValues[0]}` : `must be one of ${either(shownValues)}`;
}

function bounds(v: number, s: SchemaObject, pointer: string): Issue[] {
  const out: Issue[] = [];
  const add = (message: string) => out.push({ pointer, message: `${message}, not ${v}`, shallow: false });
  if (typeof s.minimum === 'number' && v < s.minimum) add(`must be ≥ ${s.minimum}`);
  if (typeof s.maximum === 'number' && v > s.maximum) add(`must be ≤ ${s.maximum}`);
  if (typeof s.exclusiveMinimum === 'number' && v <= s.exclusiveMinimum) add(`must be > ${s.exclusiveMinimum}`);
  if (typeof s.exclusiveMaximum === 'number' && v >= s.exclusiveMaximum) add(`must be < ${s.exclusiveMaximum}`);
  return out;
}

function lengths(v: string, s: SchemaObject, pointer: string): Issue[] {
  const out: Issue[] = [];
  const n = [...v].length;
  if (typeof s.minLength === 'number' && n < s.minLength) {
    const message = s.minLength === 1 ? 'must not be empty' : `must be at least ${s.minLength} characters long`;
    out.push({ pointer, message, shallow: false });
  }
  if (typeof s.maxLength === 'number' && n > s.maxLength) {
    out.push({ pointer, message: `must be at most ${s.maxLength} characters long, not ${n}`, shallow: false });
  }
  if (typeof s.pattern === 'string') {
    let re: RegExp | null = null;
    try {
      re = new RegExp(s.pattern, 'u');
    } catch {
      // A pattern JavaScript cannot read checks nothing.
    }
    if (re && !re.test(v)) out.push({ pointer, message: `must match the pattern ${s.pattern}`, shallow: false });
  }
  return out;
}

function arrayIssues(v: unknown[], s: SchemaObject, at: string[], document: unknown, refs: number): Issue[] {
  const out: Issue[] = [];
  const pointer = pointerOf(at);
  if (typeof s.minItems === 'number' && v.length < s.minItems) {
    out.push({ pointer, message: `needs at least ${s.minItems} item${s.minItems === 1 ? '' : 's'}`, shallow: false });
  }
  if (typeof s.maxItems === 'number' && v.length > s.maxItems) {
    out.push({ pointer, message: `may have at most ${s.maxItems} items, not ${v.length}`, shallow: false });
  }
  const prefix = s.prefixItems ?? [];
  v.forEach((item, i) => {
    const itemSchema = i < prefix.length ? prefix[i] : s.items;
    if (itemSchema !== undefined) out.push(...check(item, itemSchema, [...at, String(i)], document, refs));
  });
  return out;
}

function objectIssues(v: Record<string, unknown>, s: SchemaObject, at: string[], document: unknown, refs: number): Issue[] {
  const out: Issue[] = [];
  const pointer = pointerOf(at);
  for (const name of s.required ?? []) {
    if (!Object.prototype.hasOwnProperty.call(v, name)) out.push({ pointer, message: `needs \`${name}\``, shallow: false });
  }
  const known = s.properties ?? {};
  for (const key of Object.keys(v)) {
    const child = [...at, key];
    if (Object.prototype.hasOwnProperty.call(known, key)) {
      out.push(...check(v[key], known[key]!, child, document, refs));
    } else if (s.additionalProperties === false) {
      out.push({ pointer: pointerOf(child), message: `is not a field here${fieldHint(key, Object.keys(known))}`, shallow: false });
    } else if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
      out.push(...check(v[key], s.additionalProperties, child, document, refs));
    }
  }
  return out;
}

/** ` (did you mean `x`?)` for a misspelt field, else the fields there are when they are few. */
function fieldHint(key: string, fields: string[]): string {
  if (fields.length === 0) return ' (this object has no fields)';
  const scored = fields.map((f) => ({ f, d: distance(key.toLowerCase(), f.toLowerCase()) })).sort((a, b) => a.d - b.d);
  const best = scored[0]!;
  if (best.d <= Math.max(1, Math.floor(best.f.length / 3))) return ` (did you mean \`${best.f}\`?)`;
  return fields.length <= 12 ? ` (the fields are ${either(fields.map((f) => `\`${f}\``))})` : '';
}

/** Levenshtein distance. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * `oneOf` (`exactly`) or `anyOf`: fine when one branch (exactly one) fits. Otherwise the
 * errors of the branch that applies to the value's kind and comes closest, or, when none
 * applies, one error that says what the value may be.
 */
function alternatives(value: unknown, branches: Schema[], at: string[], document: unknown, refs: number, exactly: boolean): Issue[] {
  const pointer = pointerOf(at);
  const results = branches.map((b) => check(value, b, at, document, refs));
  const fitting = results.filter((r) => r.length === 0).length;
  if (fitting === 1 || (fitting > 1 && !exactly)) return [];
  if (fitting > 1) return [{ pointer, message: 'fits more than one of its alternatives', shallow: false }];
  const applying = results.filter((r) => !r.some((i) => i.shallow && i.pointer === pointer));
  if (applying.length > 0) return applying.reduce((best, r) => (r.length < best.length ? r : best));
  const kinds = branches.map((b) => describe(b, document, 0));
  return [{ pointer, message: `must be ${either(kinds)}, not ${shown(value)}`, shallow: true }];
}

/** What a schema accepts, in a few words (`null`, `an integer`, `one of "a" or "b"`). */
export function describe(schema: Schema, document: unknown, refs = 0): string {
  if (schema === true) return 'anything';
  if (schema === false) return 'nothing';
  if (schema.$ref !== undefined && refs < MAX_REFS) {
    const target = resolveRef(document, schema.$ref);
    if (target !== undefined) return describe(target, document, refs + 1);
  }
  if (schema.enum) {
    const values = schema.enum.map((e) => JSON.stringify(e));
    return values.length === 1 ? values[0]! : `one of ${either(values)}`;
  }
  if ('const' in schema) return JSON.stringify(schema.const);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    return either(types.map((t) => TYPE_NAMES[t] ?? t));
  }
  const branches = schema.oneOf ?? schema.anyOf ?? schema.allOf?.slice(0, 1);
  if (branches) return either(branches.map((b) => describe(b, document, refs + 1)));
  return 'a value of another kind';
}

/** An error as a line shows it: `nodes/2/parallelism must be ≥ 1` (`root` names the whole value). */
export function errorText(e: SchemaError, root = 'the spec'): string {
  const where = e.pointer === '' ? root : pointerTokens(e.pointer).join('/');
  return `${where} ${e.message}`;
}
