import { freePort } from './free-port';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  to: string[];
  raw: string;
  /** The raw message with quoted-printable soft breaks and escapes undone (good enough to find links). */
  decoded: string;
}

/** A real SMTP server in the test process (the `smtp-server` package), collecting what it receives. */
export class TestSmtpServer {
  readonly messages: ReceivedMail[] = [];
  private server?: SMTPServer;
  /** How long the server sits on each message before accepting it (a slow SMTP server). */
  holdMs = 0;

  constructor(readonly port: number) {}

  static async start(port?: number): Promise<TestSmtpServer> {
    const smtp = new TestSmtpServer(port ?? (await freePort()));
    await smtp.listen();
    return smtp;
  }

  listen(): Promise<void> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          this.messages.push({
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
            decoded: decodeQuotedPrintable(raw),
          });
          // Unref'd: a message still held when its spec ends must not keep the Jest worker alive.
          setTimeout(callback, this.holdMs).unref();
        });
      },
    });
    return new Promise((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  messagesTo(address: string): ReceivedMail[] {
    return this.messages.filter((m) => m.to.includes(address));
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function decodeQuotedPrintable(raw: string): string {
  return raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
