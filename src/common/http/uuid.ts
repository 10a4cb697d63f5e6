const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a path parameter can be an id at all (anything else is simply "not found"). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const QUOTE = 0x22;
const COMMA = 0x2c;
const DASH = 0x2d;
/** `"8-4-4-4-12"` and its comma: the JSON of one id in a list. */
const QUOTED_ID_LENGTH = 39;

/**
 * `before`, then the ids given as their 16 bytes each (PostgreSQL's `uuid_send`, aggregated into one
 * `bytea` per chunk) as a JSON array of their lower-case text, then `after`: one UTF-8 buffer, the
 * body of a response. For `/developers/me`, whose caller may see 100k databases: PostgreSQL
 * aggregates 16 bytes an id in about a third of the time it takes to aggregate their text (see
 * DevelopersService's DEVELOPER_WITH_WORKSPACES), and the ids are written byte by byte into the
 * buffer that is sent, without a string (and its encoding) in between.
 */
export function withUuidArray(before: string, chunks: readonly Uint8Array[], after: string): Buffer {
  let count = 0;
  for (const chunk of chunks) {
    if (chunk.length % 16 !== 0) throw new Error(`${chunk.length} bytes are not a whole number of ids`);
    count += chunk.length / 16;
  }
  const beforeLength = Buffer.byteLength(before);
  const idsLength = count ? count * QUOTED_ID_LENGTH - 1 : 0;
  const out = Buffer.allocUnsafe(beforeLength + 1 + idsLength + 1 + Buffer.byteLength(after));
  let at = out.write(before);
  out[at++] = 0x5b; // [
  const first = at;
  for (const chunk of chunks) {
    for (let i = 0; i < chunk.length; i++) {
      const inId = i & 15;
      if (inId === 0) {
        if (at > first) out[at++] = COMMA;
        out[at++] = QUOTE;
      } else if (inId === 4 || inId === 6 || inId === 8 || inId === 10) {
        out[at++] = DASH;
      }
      const byte = chunk[i];
      out[at++] = HEX_DIGITS[byte >> 4];
      out[at++] = HEX_DIGITS[byte & 15];
      if (inId === 15) out[at++] = QUOTE;
    }
  }
  out[at++] = 0x5d; // ]
  out.write(after, at);
  return out;
}
