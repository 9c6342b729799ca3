import { describe, expect, it } from 'vitest';
import { lineOffset, locate, parseJson, pointerAt, pointerOf, pointerTokens, positionAt, type JsonNode } from './jsonpos';

const SPEC = `{
  "name": "wordcount",
  "nodes": [
    { "id": "lines", "kind": "source" },
    {
      "id": "split",
      "parallelism": 2
    }
  ],
  "a/b": { "~x": [true, null, -1.5e3] }
}`;

function root(text: string): JsonNode {
  const p = parseJson(text);
  if (!p.ok) throw new Error(p.error.message);
  return p.node;
}

/** Line and column of what `pointer` names in `text`. */
function at(text: string, pointer: string) {
  const { line, column } = positionAt(text, locate(root(text), pointer).offset);
  return { line, column };
}

describe('parseJson', () => {
  it('reads what JSON.parse reads, to the same value', () => {
    const texts = [
      SPEC,
      '0',
      '-0.5e-2',
      '"\\u00e9\\n\\t\\"\\\\\\/\\ud83d\\ude00 é"',
      '[]',
      '{}',
      ' [1, [2, [3, {"a": {}}]], "x"] ',
      '{"a": 1, "a": 2}',
      '{"__proto__": {"x": 1}}',
      'true',
      'null',
      '12345678901234567890',
    ];
    for (const t of texts) {
      const p = parseJson(t);
      expect(p.ok, t).toBe(true);
      if (p.ok) expect(p.value).toEqual(JSON.parse(t));
    }
    const proto = parseJson('{"__proto__": {"x": 1}}');
    expect(proto.ok && Object.getPrototypeOf(proto.value)).toBe(Object.prototype);
  });

  it('accepts and refuses exactly what JSON.parse does, for many broken texts', () => {
    // Every text one edit away from a valid one: a character deleted, or one of a few inserted.
    const base = '{"a": [1, -2.5e3, "x\\ny"], "b": {"c": null, "d": true}}';
    const variants: string[] = [];
    for (let i = 0; i <= base.length; i++) {
      variants.push(base.slice(0, i) + base.slice(i + 1));
      for (const c of [',', '"', '}', ']', '0', '.', 'e', '-', ' ', '\\', ':', "'", 'x']) variants.push(base.slice(0, i) + c + base.slice(i));
    }
    for (const t of variants) {
      let expected: unknown;
      let valid = true;
      try {
        expected = JSON.parse(t);
      } catch {
        valid = false;
      }
      const p = parseJson(t);
      expect(p.ok, t).toBe(valid);
      if (p.ok) expect(p.value, t).toEqual(expected);
    }
  });

  it('keeps where each value and key is', () => {
    expect(at(SPEC, '')).toEqual({ line: 1, column: 1 });
    expect(at(SPEC, '/name')).toEqual({ line: 2, column: 3 });
    expect(at(SPEC, '/nodes/0')).toEqual({ line: 4, column: 5 });
    expect(at(SPEC, '/nodes/0/kind')).toEqual({ line: 4, column: 22 });
    expect(at(SPEC, '/nodes/1/parallelism')).toEqual({ line: 7, column: 7 });
    expect(at(SPEC, '/a~1b/~0x/2')).toEqual({ line: 10, column: 31 });
    const n = locate(root(SPEC), '/nodes/1/parallelism').node;
    expect(n.type === 'number' && n.raw).toBe('2');
  });

  it('falls back to the nearest existing ancestor of a pointer', () => {
    const r = root(SPEC);
    expect(locate(r, '/nodes/1/module')).toMatchObject({ exact: false, pointer: '/nodes/1' });
    expect(at(SPEC, '/nodes/1/module')).toEqual({ line: 5, column: 5 });
    expect(locate(r, '/nodes/7/id')).toMatchObject({ exact: false, pointer: '/nodes' });
    expect(locate(r, '/name/x')).toMatchObject({ exact: false, pointer: '/name' });
    expect(locate(r, '/nodes/01')).toMatchObject({ exact: false, pointer: '/nodes' });
  });

  it('maps an offset back to the pointer of what contains it', () => {
    const r = root(SPEC);
    expect(pointerAt(r, SPEC.indexOf('"parallelism"') + 3)).toBe('/nodes/1/parallelism');
    expect(pointerAt(r, SPEC.indexOf('2\n'))).toBe('/nodes/1/parallelism');
    expect(pointerAt(r, SPEC.indexOf('"source"'))).toBe('/nodes/0/kind');
    expect(pointerAt(r, SPEC.indexOf('-1.5e3') + 2)).toBe('/a~1b/~0x/2');
    expect(pointerAt(r, 0)).toBe('');
  });

  it('says where a syntax error is and what it is', () => {
    const err = (t: string) => {
      const p = parseJson(t);
      if (p.ok) throw new Error(`parsed: ${t}`);
      return p.error;
    };
    // A missing comma: at the next property.
    expect(err('{\n  "a": 1\n  "b": 2\n}')).toMatchObject({ line: 3, column: 3 });
    expect(err('{\n  "a": 1\n  "b": 2\n}').message).toMatch(/expected `,` or `}` after the value of "a".*comma missing/);
    // A trailing comma: at the comma.
    expect(err('{\n  "a": 1,\n}')).toMatchObject({ line: 2, column: 9, message: 'a comma before `}`: JSON allows no trailing comma' });
    expect(err('[1,\n2,\n]')).toMatchObject({ line: 2, column: 2 });
    expect(err('{\n  "a": [1,\n')).toMatchObject({ line: 3, column: 1 });
    expect(err('{\n  "a": [1,\n').message).toMatch(/array opened on line 2 is not closed/);
    expect(err('{"a": {"b": 1}').message).toMatch(/object opened on line 1 is not closed/);
    expect(err('{"a": "x\n"}')).toMatchObject({ line: 1, column: 9 });
    expect(err('{"a": "x\n"}').message).toMatch(/line break inside a string/);
    expect(err('{"a": "abc')).toMatchObject({ column: 7, message: 'the string is not closed: `"` is missing' });
    expect(err('').message).toBe('the text is empty: expected a JSON value');
    expect(err("{'a': 1}").message).toMatch(/property name in double quotes/);
    expect(err("['a']").message).toMatch(/double quotes/);
    expect(err('{"p": 01}').message).toMatch(/cannot start with 0/);
    expect(err('{"p": tru}')).toMatchObject({ column: 7, message: expect.stringMatching(/unexpected `tru`/) });
    expect(err('{"p": 1x}').message).toMatch(/`1x`: not a number/);
    expect(err('{} {}')).toMatchObject({ column: 4, message: 'unexpected `{` after the end of the JSON value' });
    expect(err('{"a" 1}').message).toMatch(/expected `:` after the property name "a"/);
    expect(err('"\\x"').message).toMatch(/`\\x` is not an escape/);
    expect(err('"\\u12"').message).toMatch(/four hexadecimal digits/);
    expect(err('['.repeat(300)).message).toMatch(/nested more than/);
  });
});

describe('positions and pointers', () => {
  it('counts lines and columns from 1', () => {
    expect(positionAt('ab\ncd', 0)).toEqual({ offset: 0, line: 1, column: 1 });
    expect(positionAt('ab\ncd', 3)).toEqual({ offset: 3, line: 2, column: 1 });
    expect(positionAt('ab\ncd', 99)).toEqual({ offset: 5, line: 2, column: 3 });
    expect(lineOffset('ab\ncd\n', 2)).toBe(3);
    expect(lineOffset('ab\ncd\n', 3)).toBe(6);
    expect(lineOffset('ab', 5)).toBe(2);
  });
  it('escapes and reads pointer tokens', () => {
    expect(pointerOf(['nodes', 2, 'a/b~c'])).toBe('/nodes/2/a~1b~0c');
    expect(pointerTokens('/nodes/2/a~1b~0c')).toEqual(['nodes', '2', 'a/b~c']);
    expect(pointerTokens('')).toEqual([]);
    expect(pointerOf([])).toBe('');
  });
});
