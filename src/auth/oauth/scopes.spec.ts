import { isSubsetOf, parseScope } from './scopes';

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
});
