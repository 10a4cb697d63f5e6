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

/** Sends e-mail over SMTP (`SMTP_URL`, nodemailer URL syntax). */
@Injectable()
export class Mailer implements OnApplicationShutdown {
  private readonly transport: Transporter;

  constructor(private readonly config: AppConfig) {
    // Bounded waits: the invite e-mail job holds the invite's row lock while sending.
    this.transport = createTransport(
      { url: config.env.SMTP_URL, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 },
      { from: config.env.MAIL_FROM },
    );
  }

  async send(mail: OutgoingMail): Promise<void> {
    await this.transport.sendMail({ ...mail, from: this.config.env.MAIL_FROM });
  }

  onApplicationShutdown(): void {
    this.transport.close();
  }
}
