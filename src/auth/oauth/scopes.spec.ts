import { ALL_SCOPES, grantedScopes, isSubsetOf, parseScope, scopeNames, scopeSetOf } from './scopes';

describe('scopes', () => {
  it('grants every supported scope when none is asked for', () => {
    expect(parseScope(undefined)).toEqual({ ok: true, scope: 'workspaces databases query' });
    expect(parseScope('')).toEqual({ ok: true, scope: 'workspaces databases query' });
  });

  it('normalises order and duplicates', () => {
    expect(parseScope('query  workspaces query')).toEqual({ ok: true, scope: 'workspaces query' });
  });

  it('names unknown scopes', () => {
    expect(parseScope('workspaces admin root admin')).toEqual({ ok: false, unknown: ['admin', 'root'] });
  });

  it('tells whether a scope narrows a grant', () => {
    expect(isSubsetOf('workspaces', 'workspaces databases')).toBe(true);
    expect(isSubsetOf('workspaces query', 'workspaces databases')).toBe(false);
    expect(isSubsetOf('', 'workspaces')).toBe(true);
  });

  it('reads a token’s scope claim into the set the guard tests', () => {
    expect(scopeNames(grantedScopes('workspaces databases query'))).toBe('workspaces databases query');
    expect(grantedScopes('databases')).toBe(scopeSetOf('databases'));
    expect(grantedScopes('query workspaces')).toBe(scopeSetOf('workspaces', 'query'));
    expect(grantedScopes('workspaces databases query')).toBe(ALL_SCOPES);
  });

  it('grants every scope to a token that records none', () => {
    expect(grantedScopes(undefined)).toBe(ALL_SCOPES);
    expect(grantedScopes('')).toBe(ALL_SCOPES);
  });

  it('grants nothing for words it does not know or a claim that is not a string', () => {
    expect(grantedScopes('admin')).toBe(0);
    expect(grantedScopes('admin databases')).toBe(scopeSetOf('databases'));
    expect(grantedScopes(7)).toBe(0);
    expect(grantedScopes(['workspaces'])).toBe(0);
  });

  it('names the scopes of a set in their fixed order', () => {
    expect(scopeNames(scopeSetOf('query', 'workspaces'))).toBe('workspaces query');
    expect(scopeNames(0)).toBe('');
  });
});
