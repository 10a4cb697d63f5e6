import { slugify } from './slug';

describe('slugify', () => {
  it.each([
    ['Acme', 'acme'],
    ['My Workspace', 'my-workspace'],
    ['Café Olé', 'caf-ol'],
    ['東京 team', 'team'],
    ['a/b?c#d%e', 'a-b-c-d-e'],
    ['  spaced   out  ', 'spaced-out'],
    ['under_score-dash', 'under_score-dash'],
    ['../../etc/passwd', 'etc-passwd'],
    ['Ünïcödé', 'n-c-d'],
    // Non-ASCII letters whose lower case is ASCII (dotted capital I, the Kelvin sign) are still
    // non-ASCII characters of the name: hyphens, not letters.
    ['İzmir', 'zmir'],
    ['\u212A2 lab', '2-lab'],
  ])('turns %j into %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });

  it('leaves nothing when the name has no ASCII letter or digit', () => {
    expect(slugify('東京')).toBe('');
    expect(slugify('---')).toBe('');
    expect(slugify('_')).toBe('');
    expect(slugify('-_-')).toBe('');
    expect(slugify('東京_')).toBe('');
    expect(slugify('\u212A')).toBe('');
  });

  it('only ever yields URL-path-safe ASCII', () => {
    for (const name of ['Hello, World!', 'tab\there', 'emoji 🚀 rocket', 'quote"s', "it's", 'semi;colon']) {
      expect(slugify(name)).toMatch(/^[a-z0-9_-]*$/);
    }
  });
});
