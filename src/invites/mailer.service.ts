import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createTransport, Transporter } from 'nodemailer';
import { AppConfig } from '../config/app-config';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** A stable Message-ID, so a receiver can recognise a duplicate. */
  messageId: string;
}

/** SMTP connections kept open and reused; at most this many messages are handed to them at once. */
const CONNECTIONS = 4;
/**
 * How long a message may wait for one of those connections before it fails unsent (and is retried
 * like any failed send). Bounds the time from a lease taken to the message's last SMTP command:
 * this wait plus the transport's connection, greeting and socket timeouts stay within the invite's
 * e-mail lease, so a message still queued here never goes out after its lease ran out.
 */
const QUEUE_WAIT_MS = 30_000;

/** Sends e-mail over SMTP (`SMTP_URL`, nodemailer URL syntax). */
@Injectable()
export class Mailer implements OnApplicationShutdown {
  private readonly transport: Transporter;
  private sending = 0;
  private readonly waiting: { resolve: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(private readonly config: AppConfig) {
    // Pooled: a message costs MAIL, RCPT and DATA on an open connection instead of a TCP connect,
    // the greeting, EHLO and QUIT (measured with `npm run bench`: most of a send's CPU).
    this.transport = createTransport(
      {
        url: config.env.SMTP_URL,
        pool: true,
        maxConnections: CONNECTIONS,
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 30_000,
      },
      { from: config.env.MAIL_FROM },
    );
  }

  async send(mail: OutgoingMail): Promise<void> {
    await this.connectionSlot();
    try {
      await this.transport.sendMail({ ...mail, from: this.config.env.MAIL_FROM });
    } finally {
      this.sending--;
      this.waiting.shift()?.resolve();
    }
  }

  /** Waits (at most QUEUE_WAIT_MS) until fewer than CONNECTIONS messages are with the transport, and takes a place. */
  private connectionSlot(): Promise<void> {
    if (this.sending < CONNECTIONS) {
      this.sending++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: () => {
          clearTimeout(waiter.timer);
          this.sending++;
          resolve();
        },
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(new Error(`no SMTP connection free within ${QUEUE_WAIT_MS} ms`));
        }, QUEUE_WAIT_MS),
      };
      this.waiting.push(waiter);
    });
  }

  onApplicationShutdown(): void {
    this.transport.close();
  }
}
