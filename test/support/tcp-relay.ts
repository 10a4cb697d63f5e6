import { connect, createServer, Server, Socket } from 'node:net';
import { freePort } from './free-port';

/**
 * A TCP relay on a port of its own in front of a real server (Redis, a PostgreSQL cluster), for
 * specs where that server goes away while the service runs. `down` cuts every connection and stops
 * listening (connections are refused: a server that stopped); `stall` cuts every connection and then
 * accepts new ones without ever answering (a server that hangs, or a network that drops packets:
 * each connect waits out its timeout); `up` and `resume` bring it back. `hold` keeps connections
 * open but holds back, from the first client message matching a pattern on, what a client sends (a
 * server that takes that statement for ever, as CREATE DATABASE waiting on a slow checkpoint);
 * `release` sends it on.
 */
export class TcpRelay {
  private server?: Server;
  private stalled = false;
  private readonly relayed = new Set<Socket>();
  private readonly held = new Set<Socket>();
  private holding?: RegExp;
  /** What each held-back client has sent since its first matching message, in order. */
  private readonly heldBack = new Map<Socket, { upstream: Socket; chunks: Buffer[] }>();

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** A relay to `target`, listening once `up` is called. */
  static async to(target: { host: string; port: number }): Promise<TcpRelay> {
    return new TcpRelay(await freePort(), target);
  }

  /** A relay, already up, to the server a URL names (a PostgreSQL cluster's, port 5432 unless given). */
  static async inFrontOf(url: string): Promise<TcpRelay> {
    const { hostname, port } = new URL(url);
    const relay = await TcpRelay.to({ host: hostname, port: Number(port || 5432) });
    await relay.up();
    return relay;
  }

  /** `url` with its host and port replaced by the relay's. */
  through(url: string): string {
    const relayed = new URL(url);
    relayed.host = `127.0.0.1:${this.port}`;
    return relayed.toString();
  }

  async up(): Promise<void> {
    const server = createServer((client) => {
      client.on('error', () => client.destroy());
      if (this.stalled) {
        this.held.add(client);
        client.on('close', () => this.held.delete(client));
        return;
      }
      const upstream = connect(this.target.port, this.target.host);
      for (const [socket, other] of [
        [client, upstream],
        [upstream, client],
      ]) {
        this.relayed.add(socket);
        socket.on('error', () => socket.destroy());
        socket.on('close', () => {
          this.relayed.delete(socket);
          other.destroy();
        });
      }
      upstream.pipe(client);
      client.on('data', (chunk: Buffer) => {
        const held = this.heldBack.get(client);
        if (held) held.chunks.push(chunk);
        else if (this.holding?.test(chunk.toString('latin1'))) this.heldBack.set(client, { upstream, chunks: [chunk] });
        else upstream.write(chunk);
      });
      client.on('end', () => upstream.end());
      client.on('close', () => this.heldBack.delete(client));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.server = server;
  }

  async stall(): Promise<void> {
    this.stalled = true;
    for (const socket of this.relayed) socket.destroy();
    // Let the clients' pools notice their connections are gone.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  resume(): void {
    this.stalled = false;
    for (const socket of this.held) socket.destroy();
  }

  /** From now on, holds back what a client sends from its first message matching `pattern` on. */
  hold(pattern: RegExp): void {
    this.holding = pattern;
  }

  /** How many connections are held back now. */
  get heldBackCount(): number {
    return this.heldBack.size;
  }

  /** Sends on what was held back, and holds nothing more. */
  release(): void {
    this.holding = undefined;
    for (const [client, { upstream, chunks }] of this.heldBack) {
      this.heldBack.delete(client);
      for (const chunk of chunks) upstream.write(chunk);
    }
  }

  async down(): Promise<void> {
    this.resume();
    for (const socket of this.relayed) socket.destroy();
    const server = this.server;
    this.server = undefined;
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  }
}
