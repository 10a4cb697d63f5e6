import {
  DatabaseIdsCache,
  MAX_REMEMBERED_BYTES,
  MAX_REMEMBERED_WORKSPACES,
  MIN_REMEMBERED_IDS,
} from './database-ids-cache';

const ids = (count: number) => new Uint8Array(count * 16);

describe('the remembered database ids of big workspaces', () => {
  it('remembers a workspace only from MIN_REMEMBERED_IDS ids on', () => {
    const cache = new DatabaseIdsCache();
    cache.remember('small', '1', ids(MIN_REMEMBERED_IDS - 1));
    cache.remember('big', '1', ids(MIN_REMEMBERED_IDS));
    expect([...cache.snapshot().keys()]).toEqual(['big']);
  });

  it('keeps the newer of two reads of one workspace', () => {
    const cache = new DatabaseIdsCache();
    const newer = ids(MIN_REMEMBERED_IDS + 1);
    cache.remember('w', '10', newer);
    cache.remember('w', '9', ids(MIN_REMEMBERED_IDS));
    expect(cache.snapshot().get('w')).toEqual({ version: '10', ids: newer });
    cache.remember('w', '11', ids(MIN_REMEMBERED_IDS));
    expect(cache.snapshot().get('w')?.version).toBe('11');
  });

  it('forgets the least recently used first, by count and by bytes', () => {
    const cache = new DatabaseIdsCache();
    for (let i = 0; i < MAX_REMEMBERED_WORKSPACES; i++) cache.remember(`w${i}`, '1', ids(MIN_REMEMBERED_IDS));
    // w0 used again: w1 is now the least recently used.
    const w0 = cache.snapshot().get('w0')!;
    expect(cache.reuse('w0', w0)).toBe(w0.ids);
    cache.remember('one-more', '1', ids(MIN_REMEMBERED_IDS));
    const kept = [...cache.snapshot().keys()];
    expect(kept).toHaveLength(MAX_REMEMBERED_WORKSPACES);
    expect(kept).toContain('w0');
    expect(kept).not.toContain('w1');

    const huge = MAX_REMEMBERED_BYTES / 16 / 2;
    cache.remember('huge-a', '1', ids(huge));
    cache.remember('huge-b', '1', ids(huge));
    // The two halves of the budget leave no room for anything else.
    expect([...cache.snapshot().keys()]).toEqual(['huge-a', 'huge-b']);
    cache.remember('too-big', '1', ids(huge * 2 + 1));
    expect(cache.snapshot().has('too-big')).toBe(false);
  });

  it('serves a snapshot that later changes do not alter', () => {
    const cache = new DatabaseIdsCache();
    cache.remember('w', '1', ids(MIN_REMEMBERED_IDS));
    const sent = cache.snapshot();
    cache.remember('w', '2', ids(MIN_REMEMBERED_IDS + 1));
    expect(sent.get('w')?.version).toBe('1');
    // Reusing what a statement was sent does not undo the newer read.
    cache.reuse('w', sent.get('w')!);
    expect(cache.snapshot().get('w')?.version).toBe('2');
  });
});
