/**
 * The scopes a token may carry (the ones the Nile CLI asks for). They describe what the client
 * intends to do; access itself follows the developer's memberships.
 */
export const SUPPORTED_SCOPES = ['workspaces', 'databases', 'query'] as const;

export type ScopeParseResult = { ok: true; scope: string } | { ok: false; unknown: string[] };

/**
 * Parses a space-delimited `scope` parameter into a normalised string (known scopes, in a fixed
 * order, without duplicates). An absent or empty parameter means every supported scope.
 */
export function parseScope(raw: string | undefined): ScopeParseResult {
  const requested = (raw ?? '').split(' ').filter(Boolean);
  if (!requested.length) return { ok: true, scope: SUPPORTED_SCOPES.join(' ') };
  const unknown = requested.filter((s) => !(SUPPORTED_SCOPES as readonly string[]).includes(s));
  if (unknown.length) return { ok: false, unknown: [...new Set(unknown)] };
  return { ok: true, scope: SUPPORTED_SCOPES.filter((s) => requested.includes(s)).join(' ') };
}

/** Whether every scope of `requested` was part of `granted` (a refresh may narrow, never widen). */
export function isSubsetOf(requested: string, granted: string): boolean {
  const have = new Set(granted.split(' ').filter(Boolean));
  return requested
    .split(' ')
    .filter(Boolean)
    .every((s) => have.has(s));
}
