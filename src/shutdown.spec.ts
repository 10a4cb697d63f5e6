import type { ServerResponse } from 'node:http';
import { InFlight } from './shutdown';

const response = (name: string) => ({ name }) as unknown as ServerResponse;
const names = (inFlight: InFlight) => [...inFlight].map((res) => (res as unknown as { name: string }).name).sort();

describe('InFlight (the responses a stopping server still answers)', () => {
  it('holds exactly the responses added and not yet deleted, whatever order they close in', () => {
    const inFlight = new InFlight();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(response);
    for (const res of [a, b, c, d]) inFlight.add(res);
    inFlight.delete(b); // from the middle: the last takes its place
    expect(names(inFlight)).toEqual(['a', 'c', 'd']);
    inFlight.delete(d); // the last itself
    expect(names(inFlight)).toEqual(['a', 'c']);
    inFlight.add(b);
    inFlight.delete(a); // the first
    expect(names(inFlight)).toEqual(['b', 'c']);
    inFlight.delete(c);
    inFlight.delete(b);
    expect(names(inFlight)).toEqual([]);
  });

  it('ignores a response deleted twice or never added', () => {
    const inFlight = new InFlight();
    const [a, b, stranger] = ['a', 'b', 'stranger'].map(response);
    inFlight.add(a);
    inFlight.add(b);
    inFlight.delete(a);
    inFlight.delete(a);
    inFlight.delete(stranger);
    expect(names(inFlight)).toEqual(['b']);
  });
});
