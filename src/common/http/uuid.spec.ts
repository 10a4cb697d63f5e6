import { randomUUID } from 'node:crypto';
import { isUuid, withUuidArray } from './uuid';

const bytesOf = (ids: string[]) => Buffer.concat(ids.map((id) => Buffer.from(id.replaceAll('-', ''), 'hex')));

describe('ids as 16 bytes each, written as a JSON array between two texts', () => {
  it('give each id quoted in its canonical lower-case form, in order, joined by commas', () => {
    const ids = Array.from({ length: 1000 }, () => randomUUID());
    ids.push('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff');
    const body = withUuidArray('{"ids":', [bytesOf(ids)], '}');
    expect(body.toString('utf8')).toBe(JSON.stringify({ ids }));
    expect((JSON.parse(body.toString('utf8')) as { ids: string[] }).ids.every(isUuid)).toBe(true);
  });

  it('join the ids of several chunks, skipping empty ones, and give [] for no ids', () => {
    const a = [randomUUID(), randomUUID()];
    const b = [randomUUID()];
    expect(withUuidArray('', [bytesOf(a), Buffer.alloc(0), bytesOf(b)], '').toString()).toBe(
      JSON.stringify([...a, ...b]),
    );
    expect(withUuidArray('{"a":1,"ids":', [], '}').toString()).toBe('{"a":1,"ids":[]}');
    expect(withUuidArray('[', [Buffer.alloc(0)], ']').toString()).toBe('[[]]');
  });

  it('keep the texts around the ids whole, whatever their characters', () => {
    const id = randomUUID();
    const before = '{"name":"Zoë 🐘 \\"quoted\\"","ids":';
    const body = withUuidArray(before, [bytesOf([id])], ',"tail":"ß"}');
    expect(JSON.parse(body.toString('utf8'))).toEqual({ name: 'Zoë 🐘 "quoted"', ids: [id], tail: 'ß' });
    expect(body.length).toBe(Buffer.byteLength(`${before}["${id}"],"tail":"ß"}`));
  });

  it('refuse bytes that are not a whole number of ids', () => {
    expect(() => withUuidArray('', [Buffer.alloc(17)], '')).toThrow('not a whole number of ids');
  });
});
