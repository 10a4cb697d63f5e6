/** How deep a request body or query may nest objects and arrays; no DTO here goes beyond 3. */
export const MAX_JSON_DEPTH = 32;

/**
 * Keys that class-transformer drops silently (to protect prototypes), so the unknown-field check
 * would never see them: they are refused like any other unknown field.
 */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Why a parsed request value cannot be handed to validation, or null. Walks iteratively, so a
 * body nested thousands of levels deep is measured without recursion and refused before anything
 * recursive (class-transformer, class-validator) sees it.
 */
export function jsonShapeProblem(value: unknown): string | null {
  const stack: { node: unknown; depth: number; path: string }[] = [{ node: value, depth: 0, path: '' }];
  while (stack.length) {
    const { node, depth, path } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      return `The request nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`;
    }
    for (const key of Object.keys(node)) {
      const child = path ? `${path}.${key}` : key;
      if (!Array.isArray(node) && PROTOTYPE_KEYS.has(key)) return `property ${child} should not exist`;
      stack.push({ node: (node as Record<string, unknown>)[key], depth: depth + 1, path: child });
    }
  }
  return null;
}
