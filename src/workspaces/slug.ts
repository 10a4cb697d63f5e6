/**
 * The workspace slug rule: ASCII only, lower-cased; spaces, non-ASCII characters and characters
 * unsafe in a URL path become hyphens; runs of hyphens collapse and none lead or trail.
 * Returns '' when no ASCII letter or digit is left (the caller refuses such a name).
 */
export function slugify(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
  return /[a-z0-9]/.test(slug) ? slug : '';
}
