import { connect, createServer, Server, Socket } from 'node:net';
import { freePort } from './free-port';

/**
 * A TCP relay on a port of its own in front of a real server (Redis, a PostgreSQL cluster), for
 * specs where that server goes away while the service runs. `down` cuts every connection and stops
 * listening (connections are refused: a server that stopped); `stall` cuts every connection and then
 * accepts new ones without ever answering (a server that hangs, or a network that drops packets:
 * each connect waits out its timeout); `up` and `resume` bring it back.
 */
export class TcpRelay {
  private server?: Server;
  private stalled = false;
  private readonly relayed = new Set<Socket>();
  private readonly held = new Set<Socket>();

  private constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** A relay to `target`, listening once `up` is called. */
  static async to(target: { host: string; port: number }): Promise<TcpRelay> {
    return new TcpRelay(await freePort(), target);
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
      client.pipe(upstream).pipe(client);
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

  async down(): Promise<void> {
    this.resume();
    for (const socket of this.relayed) socket.destroy();
    const server = this.server;
    this.server = undefined;
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  }
}
