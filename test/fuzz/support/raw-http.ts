import { Agent, IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';

export interface RawRequest {
  method: string;
  /** Path and query exactly as sent (already percent-encoded, malformed on purpose at times). */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json?: unknown;
}

/**
 * Sends a request byte for byte as given (supertest would fix up the content type, the encoding
 * of the body and the path), over a keep-alive connection to the app's listening server.
 */
export class RawHttp {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 4 });

  constructor(private readonly port: number) {}

  static of(server: Server): RawHttp {
    return new RawHttp((server.address() as AddressInfo).port);
  }

  send(req: RawRequest): Promise<RawResponse> {
    const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
    const headers: Record<string, string | number> = { ...req.headers };
    if (body) headers['Content-Length'] = body.length;
    return new Promise((resolve, reject) => {
      const outgoing = request(
        { host: '127.0.0.1', port: this.port, method: req.method, path: req.path, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            if (/json/.test(res.headers['content-type'] ?? '')) {
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
