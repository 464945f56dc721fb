import { describe, expect, it } from 'vitest';
import { findJsonSyntaxError } from '../../src/json_syntax';

describe('findJsonSyntaxError', () => {
  it.each([
    ['{}'],
    ['  {"a": [1, -2.5e3, 0, true, false, null, "x\\n\\u00e9\\"", {}], "b": {"c": []}}\n'],
    ['"just a string"'],
    ['[]'],
    ['0'],
  ])('accepts JSON %j', (text) => {
    expect(findJsonSyntaxError(text)).toBeNull();
    expect(() => JSON.parse(text)).not.toThrow(); // agrees with the engine
  });

  // [text, offset of the offending character, words the reason contains]
  it.each([
    ['', 0, 'empty'],
    ['   \n', 4, 'empty'],
    ['{"a": 1,\n "b" 2}', 14, "expected ':'"],
    ['{"a": 1 "b": 2}', 8, "expected ',' or '}' after a property value"],
    ['{"a": 1,}', 8, 'trailing comma'],
    ['[1, 2,]', 6, 'trailing comma'],
    ['[1 2]', 3, "expected ',' or ']' after an array element"],
    ["{'a': 1}", 1, 'double quotes'],
    ['{"a": \'x\'}', 6, 'double quotes'],
    ['{a: 1}', 1, 'property name in double quotes'],
    ['name: x\n', 0, 'expected a value'],
    ['{"a": tru}', 6, 'expected a value'],
    ['{"a": 01}', 7, 'leading zeros'],
    ['{"a": 1.}', 7, 'invalid number'],
    ['{"a": -}', 6, 'invalid number'],
    ['{"a": "x\ny"}', 8, 'span lines'],
    ['{"a": "\\q"}', 7, 'invalid escape'],
    ['{"a": "\\u12"}', 7, 'four hex digits'],
    ['{"a": "open', 6, 'not closed'],
    ['{"a": 1', 7, 'ends inside an object'],
    ['{"a": ', 6, 'ends where a value was expected'],
    ['{"a": 1}}', 8, 'after the end of the JSON value'],
    ['{"a": 1} // note', 9, 'after the end'],
  ])('finds the error in %j at offset %i', (text, position, reason) => {
    const error = findJsonSyntaxError(text);
    expect(error?.position).toBe(position);
    expect(error?.reason).toContain(reason);
    expect(() => JSON.parse(text)).toThrow(); // the engine rejects it too
  });

  it('leaves nesting deeper than it checks to JSON.parse', () => {
    expect(findJsonSyntaxError(`${'['.repeat(2000)}${']'.repeat(2000)}`)).toBeNull();
  });
});
