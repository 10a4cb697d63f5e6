/** Thrown by ConcurrencyGate.run when as many tasks are running and waiting as the gate admits. */
export class GateFullError extends Error {
  constructor() {
    super('the gate is full');
  }
}

/**
 * At most `concurrency` tasks at a time, at most `queue` more waiting their turn (first come, first
 * served); a task beyond that is refused at once (GateFullError) instead of waiting without bound.
 */
export class ConcurrencyGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running < this.concurrency) this.running++;
    else if (this.waiting.length < this.queue) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else throw new GateFullError();
    try {
      return await task();
    } finally {
      // A finished task hands its place to the first one waiting, if any.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
