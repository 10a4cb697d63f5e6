/**
 * `work`'s outcome, or a rejection with `timeoutError()` once `ms` have passed, whichever comes
 * first. The timer is cleared either way, and a failure of `work` after the deadline is ignored
 * (not an unhandled rejection): the caller has moved on.
 */
export async function withinMs<T>(work: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  work.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), Math.max(0, ms));
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
