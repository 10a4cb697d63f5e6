/**
 * The workspace slug rule: ASCII only, lower-cased; spaces, non-ASCII characters and characters
 * unsafe in a URL path become hyphens; runs of hyphens collapse and none lead or trail.
 * Returns '' when no ASCII letter or digit is left (the caller refuses such a name).
 */
export function slugify(name: string): string {
  // Non-ASCII characters go first: some lower-case to ASCII letters (İ to i and a combining dot, the
  // Kelvin sign to k), which would otherwise pass for letters of the name.
  const slug = name
    .replace(/[^A-Za-z0-9_-]/g, '-')
    .toLowerCase()
    .replace(/-{2,}/g, '-')
    .replace(/^-+|-+$/g, '');
  return /[a-z0-9]/.test(slug) ? slug : '';
}
