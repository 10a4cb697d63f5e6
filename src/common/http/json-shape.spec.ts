import { jsonShapeProblem, MAX_JSON_DEPTH } from './json-shape';

function nestedObject(levels: number): unknown {
  return JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`);
}

function nestedArray(levels: number): unknown {
  return JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);
}

describe('the shape of a request body', () => {
  it('accepts ordinary bodies, up to the documented nesting limit', () => {
    expect(jsonShapeProblem({ name: 'db', tags: ['a', { b: [1, 2] }] })).toBeNull();
    expect(jsonShapeProblem(nestedObject(MAX_JSON_DEPTH - 1))).toBeNull();
    expect(jsonShapeProblem('text')).toBeNull();
    expect(jsonShapeProblem(undefined)).toBeNull();
  });

  it('refuses objects and arrays nested beyond the limit, however deep, without recursing', () => {
    for (const value of [
      nestedObject(MAX_JSON_DEPTH + 1),
      nestedObject(3000),
      nestedArray(5000),
      { name: nestedArray(100000) },
    ]) {
      expect(jsonShapeProblem(value)).toBe(`The request nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`);
    }
  });

  it('refuses prototype keys at any level, as JSON.parse makes them own properties', () => {
    expect(jsonShapeProblem(JSON.parse('{"name":"x","__proto__":{"admin":true}}'))).toBe(
      'property __proto__ should not exist',
    );
    expect(jsonShapeProblem(JSON.parse('{"constructor":{"prototype":{}}}'))).toBe(
      'property constructor should not exist',
    );
    expect(jsonShapeProblem(JSON.parse('{"a":{"prototype":1}}'))).toBe('property a.prototype should not exist');
  });
});
