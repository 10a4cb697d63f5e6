import { ConcurrencyGate, GateFullError } from './concurrency-gate';

/** A task that runs until released, recording that it started. */
function blocker(started: number[], id: number) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => (release = resolve));
  const task = async () => {
    started.push(id);
    await done;
    return id;
  };
  return { task, release };
}

describe('ConcurrencyGate', () => {
  it('runs at most `concurrency` tasks at once, queues `queue` more in order and refuses the rest', async () => {
    const gate = new ConcurrencyGate(2, 2);
    const started: number[] = [];
    const tasks = [1, 2, 3, 4].map((id) => blocker(started, id));
    const results = tasks.map(({ task }) => gate.run(task));
    await new Promise(setImmediate);
    expect(started).toEqual([1, 2]);

    await expect(gate.run(() => Promise.resolve(5))).rejects.toBeInstanceOf(GateFullError);

    tasks[1].release();
    await expect(results[1]).resolves.toBe(2);
    await new Promise(setImmediate);
    expect(started).toEqual([1, 2, 3]);

    tasks[0].release();
    tasks[2].release();
    tasks[3].release();
    await expect(Promise.all(results)).resolves.toEqual([1, 2, 3, 4]);
    expect(started).toEqual([1, 2, 3, 4]);
  });

  it('frees its place when a task fails, and admits new tasks once idle', async () => {
    const gate = new ConcurrencyGate(1, 0);
    await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(gate.run(() => Promise.resolve('again'))).resolves.toBe('again');
    const started: number[] = [];
    const { task, release } = blocker(started, 1);
    const running = gate.run(task);
    await expect(gate.run(() => Promise.resolve(2))).rejects.toBeInstanceOf(GateFullError);
    release();
    await running;
    await expect(gate.run(() => Promise.resolve(3))).resolves.toBe(3);
  });
});
