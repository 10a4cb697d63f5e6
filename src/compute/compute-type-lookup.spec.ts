import { allowedComputeSizes, findComputeType } from './compute-type-lookup';

const TYPES = [
  { id: 'dc-small', computeSize: 'small' },
  { id: 'dc-medium', computeSize: 'medium' },
];

describe('findComputeType (what instanceSize accepts)', () => {
  it("accepts a type's id or its size name, in any case", () => {
    expect(findComputeType(TYPES, 'dc-small')).toBe(TYPES[0]);
    expect(findComputeType(TYPES, 'medium')).toBe(TYPES[1]);
    expect(findComputeType(TYPES, 'DC-Medium')).toBe(TYPES[1]);
    expect(findComputeType(TYPES, ' small ')).toBe(TYPES[0]);
  });

  it('finds nothing for anything else', () => {
    expect(findComputeType(TYPES, 'huge')).toBeUndefined();
    expect(findComputeType(TYPES, 'dc-')).toBeUndefined();
    expect(findComputeType(TYPES, '')).toBeUndefined();
  });

  it('lists the allowed values for error messages', () => {
    expect(allowedComputeSizes(TYPES)).toBe('dc-small (small), dc-medium (medium)');
  });
});
