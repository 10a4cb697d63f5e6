/** The message of anything thrown, for logs and recorded errors. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
