/** What a caller may write as `instanceSize`: a compute type's id (`dc-small`) or its size (`small`), any case. */
export function findComputeType<T extends { id: string; computeSize: string }>(
  types: readonly T[],
  size: string,
): T | undefined {
  const wanted = size.trim().toLowerCase();
  return types.find((t) => t.id.toLowerCase() === wanted) ?? types.find((t) => t.computeSize.toLowerCase() === wanted);
}

/** The values `instanceSize` accepts, for error messages: "dc-small (small), dc-medium (medium)". */
export function allowedComputeSizes(types: readonly { id: string; computeSize: string }[]): string {
  return types.map((t) => `${t.id} (${t.computeSize})`).join(', ');
}
