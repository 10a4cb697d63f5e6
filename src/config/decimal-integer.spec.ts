import { parseDecimalInteger } from './decimal-integer';

describe('parseDecimalInteger', () => {
  it('reads decimal digits with an optional sign, ignoring surrounding whitespace', () => {
    expect(parseDecimalInteger('80')).toBe(80);
    expect(parseDecimalInteger(' 8080\n')).toBe(8080);
    expect(parseDecimalInteger('-1')).toBe(-1);
    expect(parseDecimalInteger('+5')).toBe(5);
    expect(parseDecimalInteger('010')).toBe(10);
    expect(Object.is(parseDecimalInteger('-0'), 0)).toBe(true);
  });

  it('reads nothing from what Number() would take for another number (blank as 0, hex, exponent, fraction)', () => {
    for (const text of ['', ' ', '\t', '0x50', '0b1', '0o7', '1e3', '1.5', '1.', '.5', 'Infinity', '1_000', '12abc'])
      expect({ text, value: parseDecimalInteger(text) }).toEqual({ text, value: undefined });
  });

  it('reads nothing beyond the safe integers (it would not be the number written)', () => {
    expect(parseDecimalInteger('9007199254740991')).toBe(9007199254740991);
    expect(parseDecimalInteger('9007199254740993')).toBeUndefined();
  });
});
