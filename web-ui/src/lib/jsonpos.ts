// JSON text with source positions: a parser that keeps where every value and every object key
// starts and ends, so that a JSON pointer (`/nodes/2/parallelism`) maps to a line and column of
// the text, an offset maps back to a pointer, and a syntax error says where it is. Pure.

/** A JSON value, as `JSON.parse` returns it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

interface Span {
  /** Offset of the value's first character. */
  start: number;
  /** Offset just after its last character. */
  end: number;
}

export type JsonNode =
  | (Span & { type: 'null'; value: null })
  | (Span & { type: 'boolean'; value: boolean })
  | (Span & { type: 'number'; value: number; raw: string })
  | (Span & { type: 'string'; value: string })
  | (Span & { type: 'array'; items: JsonNode[] })
  | (Span & { type: 'object'; members: JsonMember[] });

/** One `"key": value` of an object. */
export interface JsonMember {
  key: string;
  keyStart: number;
  keyEnd: number;
  value: JsonNode;
}

/** A place in the text: `line` and `column` count from 1 (columns in UTF-16 code units). */
export interface TextPosition {
  offset: number;
  line: number;
  column: number;
}

export interface JsonSyntaxError extends TextPosition {
  message: string;
}

export type ParsedJson = { ok: true; node: JsonNode; value: JsonValue } | { ok: false; error: JsonSyntaxError };

/** Deeper nesting than this is refused (a spec is a few levels deep; this bounds recursion). */
const MAX_DEPTH = 256;

class Failure extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Parses JSON text as `JSON.parse` does, keeping positions; a syntax error says where. */
export function parseJson(text: string): ParsedJson {
  let at = 0;
  /** Where the last comma was (a trailing comma is reported there). */
  let lastComma = 0;

  const fail = (message: string, offset = at): never => {
    throw new Failure(message, offset);
  };
  const ws = () => {
    for (;;) {
      const c = text.charCodeAt(at);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) at++;
      else return;
    }
  };
  /** What is at `at`, for a message: `` `x` `` or a word, or "the end of the text". */
  const shown = (offset = at): string => {
    if (offset >= text.length) return 'the end of the text';
    const quoted = /^"[^"\n]{0,30}"/.exec(text.slice(offset, offset + 32));
    if (quoted) return quoted[0];
    const word = /^[A-Za-z0-9_.+-]+/.exec(text.slice(offset, offset + 24));
    return word ? `\`${word[0]}\`` : `\`${text[offset]}\``;
  };
  const lineOf = (offset: number) => positionAt(text, offset).line;

  const value = (depth: number): JsonNode => {
    ws();
    if (depth > MAX_DEPTH) fail(`nested more than ${MAX_DEPTH} levels deep`);
    const start = at;
    const c = text[at];
    switch (c) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        return { type: 'string', start, value: string(), end: at };
      case undefined:
        return fail(start === 0 ? 'the text is empty: expected a JSON value' : 'the text ends where a value was expected');
      case "'":
        return fail('strings take double quotes (`"`), not single quotes');
      default:
        if (c === '-' || (c >= '0' && c <= '9')) return number();
        for (const [word, v] of [
          ['true', true],
          ['false', false],
          ['null', null],
        ] as const) {
          if (text.startsWith(word, at) && !/[A-Za-z0-9_]/.test(text[at + word.length] ?? '')) {
            at += word.length;
            return v === null ? { type: 'null', start, end: at, value: null } : { type: 'boolean', start, end: at, value: v };
          }
        }
        return fail(`unexpected ${shown()}: expected a value (an object, array, string, number, true, false or null)`);
    }
  };

  const object = (depth: number): JsonNode => {
    const start = at;
    at++; // {
    const members: JsonMember[] = [];
    ws();
    if (text[at] === '}') {
      at++;
      return { type: 'object', start, end: at, members };
    }
    for (;;) {
      ws();
      if (text[at] !== '"') {
        if (text[at] === '}' && members.length > 0) return fail('a comma before `}`: JSON allows no trailing comma', lastComma);
        if (at >= text.length) return fail(`the object opened on line ${lineOf(start)} is not closed: \`}\` is missing`);
        return fail(`expected a property name in double quotes, found ${shown()}`);
      }
      const keyStart = at;
      const key = string();
      const keyEnd = at;
      ws();
      if (text[at] !== ':') return fail(`expected \`:\` after the property name "${key}", found ${shown()}`);
      at++;
      members.push({ key, keyStart, keyEnd, value: value(depth + 1) });
      ws();
      if (text[at] === ',') {
        lastComma = at;
        at++;
        continue;
      }
      if (text[at] === '}') {
        at++;
        return { type: 'object', start, end: at, members };
      }
      if (at >= text.length) return fail(`the object opened on line ${lineOf(start)} is not closed: \`}\` is missing`);
      return fail(`expected \`,\` or \`}\` after the value of "${key}", found ${shown()} (is a comma missing?)`);
    }
  };

  const array = (depth: number): JsonNode => {
    const start = at;
    at++; // [
    const items: JsonNode[] = [];
    ws();
    if (text[at] === ']') {
      at++;
      return { type: 'array', start, end: at, items };
    }
    for (;;) {
      ws();
      if (text[at] === ']' && items.length > 0) return fail('a comma before `]`: JSON allows no trailing comma', lastComma);
      if (at >= text.length) return fail(`the array opened on line ${lineOf(start)} is not closed: \`]\` is missing`);
      items.push(value(depth + 1));
      ws();
      if (text[at] === ',') {
        lastComma = at;
        at++;
        continue;
      }
      if (text[at] === ']') {
        at++;
        return { type: 'array', start, end: at, items };
      }
      if (at >= text.length) return fail(`the array opened on line ${lineOf(start)} is not closed: \`]\` is missing`);
      return fail(`expected \`,\` or \`]\` after an array item, found ${shown()} (is a comma missing?)`);
    }
  };

  const string = (): string => {
    const start = at;
    at++; // "
    let out = '';
    let from = at;
    for (;;) {
      const c = text.charCodeAt(at);
      if (at >= text.length) return fail('the string is not closed: `"` is missing', start);
      if (c === 0x22) {
        out += text.slice(from, at);
        at++;
        return out;
      }
      if (c < 0x20) {
        if (c === 0x0a) return fail('a line break inside a string: close it with `"`, or write `\\n`');
        return fail('a control character inside a string');
      }
      if (c === 0x5c) {
        out += text.slice(from, at);
        const e = text[at + 1];
        const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e !== undefined && e in simple) {
          out += simple[e];
          at += 2;
        } else if (e === 'u') {
          const hex = text.slice(at + 2, at + 6);
          if (!/^[0-9A-Fa-f]{4}$/.test(hex)) return fail('`\\u` needs four hexadecimal digits');
          out += String.fromCharCode(parseInt(hex, 16));
          at += 6;
        } else {
          return fail(e === undefined ? 'the string is not closed: `"` is missing' : `\`\\${e}\` is not an escape of JSON`);
        }
        from = at;
        continue;
      }
      at++;
    }
  };

  const number = (): JsonNode => {
    const start = at;
    if (text[at] === '-') at++;
    if (text[at] === '0') {
      at++;
      if (/[0-9]/.test(text[at] ?? '')) return fail('a number cannot start with 0 followed by more digits');
    } else if (/[1-9]/.test(text[at] ?? '')) {
      while (/[0-9]/.test(text[at] ?? '')) at++;
    } else {
      return fail('expected a digit after `-`');
    }
    if (text[at] === '.') {
      at++;
      if (!/[0-9]/.test(text[at] ?? '')) return fail('expected a digit after the decimal point');
      while (/[0-9]/.test(text[at] ?? '')) at++;
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at++;
      if (text[at] === '+' || text[at] === '-') at++;
      if (!/[0-9]/.test(text[at] ?? '')) return fail('expected a digit in the exponent');
      while (/[0-9]/.test(text[at] ?? '')) at++;
    }
    if (/[A-Za-z_]/.test(text[at] ?? '')) return fail(`unexpected ${shown(start)}: not a number`, start);
    const raw = text.slice(start, at);
    return { type: 'number', start, end: at, value: Number(raw), raw };
  };

  try {
    const node = value(0);
    ws();
    if (at < text.length) fail(`unexpected ${shown()} after the end of the JSON value`);
    return { ok: true, node, value: toValue(node) };
  } catch (e) {
    if (!(e instanceof Failure)) throw e;
    return { ok: false, error: { message: e.message, ...positionAt(text, e.offset) } };
  }
}

/** The plain value of a node (duplicate keys: the last one counts, as with `JSON.parse`). */
export function toValue(node: JsonNode): JsonValue {
  switch (node.type) {
    case 'array':
      return node.items.map(toValue);
    case 'object': {
      const out: { [key: string]: JsonValue } = {};
      for (const m of node.members) {
        // A key `__proto__` is a plain property, as `JSON.parse` makes it.
        Object.defineProperty(out, m.key, { value: toValue(m.value), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    default:
      return node.value;
  }
}

/** Line and column (from 1) of `offset` in `text`. */
export function positionAt(text: string, offset: number): TextPosition {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < clamped; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { offset: clamped, line, column: clamped - lineStart + 1 };
}

/** The offset of the start of line `line` (from 1) of `text`; the end of the text past its last line. */
export function lineOffset(text: string, line: number): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', offset);
    if (nl === -1) return text.length;
    offset = nl + 1;
  }
  return offset;
}

/** The reference tokens of a JSON pointer (`/a~1b/0` → `["a/b", "0"]`); `""` is the whole document. */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .replace(/^\//, '')
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** A JSON pointer from its reference tokens. */
export function pointerOf(tokens: (string | number)[]): string {
  return tokens.map((t) => `/${String(t).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** Where a pointer leads in a parsed document. */
export interface Located {
  /** Offset of the member's key (an object's property) or of the value (an array item, the root). */
  offset: number;
  /** The value there, or the nearest enclosing one when the pointer leads nowhere. */
  node: JsonNode;
  /** Whether the whole pointer was found; if not, `offset` is of its nearest existing ancestor. */
  exact: boolean;
  /** The pointer of what was found. */
  pointer: string;
}

/** Finds what `pointer` names (a property by its key: the last member of that name, as `toValue`). */
export function locate(root: JsonNode, pointer: string): Located {
  let node = root;
  let offset = root.start;
  const found: string[] = [];
  for (const token of pointerTokens(pointer)) {
    let next: { node: JsonNode; offset: number } | null = null;
    if (node.type === 'object') {
      const m = [...node.members].reverse().find((x) => x.key === token);
      if (m) next = { node: m.value, offset: m.keyStart };
    } else if (node.type === 'array' && /^(0|[1-9][0-9]*)$/.test(token)) {
      const item = node.items[Number(token)];
      if (item) next = { node: item, offset: item.start };
    }
    if (!next) return { offset, node, exact: false, pointer: pointerOf(found) };
    node = next.node;
    offset = next.offset;
    found.push(token);
  }
  return { offset, node, exact: true, pointer: pointerOf(found) };
}

/** The pointer of the innermost value (or key) that contains `offset`. */
export function pointerAt(root: JsonNode, offset: number): string {
  const tokens: string[] = [];
  let node = root;
  for (;;) {
    let next: JsonNode | null = null;
    if (node.type === 'object') {
      const m = node.members.find((x) => offset >= x.keyStart && offset < x.value.end);
      if (m) {
        tokens.push(m.key);
        next = m.value;
      }
    } else if (node.type === 'array') {
      const i = node.items.findIndex((x) => offset >= x.start && offset < x.end);
      if (i !== -1) {
        tokens.push(String(i));
        next = node.items[i]!;
      }
    }
    if (!next) return pointerOf(tokens);
    node = next;
  }
}
