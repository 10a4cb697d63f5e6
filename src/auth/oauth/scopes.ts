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

export type Scope = (typeof SUPPORTED_SCOPES)[number];

/**
 * A set of scopes as the bits of one number (bit i: SUPPORTED_SCOPES[i]). A token's claim is read
 * into one when the token is verified and remembered with it, so checking a route's scope on every
 * request is one AND, with nothing parsed or allocated.
 */
export type ScopeSet = number;

const BIT_OF = new Map<string, ScopeSet>(SUPPORTED_SCOPES.map((scope, i) => [scope, 1 << i]));

export const ALL_SCOPES: ScopeSet = (1 << SUPPORTED_SCOPES.length) - 1;

export function scopeSetOf(...scopes: Scope[]): ScopeSet {
  return scopes.reduce((set, scope) => set | BIT_OF.get(scope)!, 0);
}

/**
 * What an access token's `scope` claim grants. An absent or empty claim grants every scope: a token
 * that records no scope (the operator CLI's and the tests' direct tokens, any client's token minted
 * without one) keeps the full access such tokens always had; the token endpoint itself always
 * records the granted scopes. Words that are not supported scopes grant nothing, and so does a
 * claim that is not a string (only this server signs tokens, so neither should ever be seen).
 */
export function grantedScopes(claim: unknown): ScopeSet {
  if (claim === undefined || claim === null || claim === '') return ALL_SCOPES;
  if (typeof claim !== 'string') return 0;
  let set = 0;
  for (const word of claim.split(' ')) set |= BIT_OF.get(word) ?? 0;
  return set;
}

/** The scopes of `set`, space-delimited in the order of SUPPORTED_SCOPES (as a `scope` parameter). */
export function scopeNames(set: ScopeSet): string {
  return SUPPORTED_SCOPES.filter((scope) => set & BIT_OF.get(scope)!).join(' ');
}
