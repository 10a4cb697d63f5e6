import { Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AppConfig } from '../../config/app-config';

/**
 * AES-256-GCM encryption of secrets stored at rest (credential passwords, pending invite codes).
 * Output: `keyId:iv:tag:ciphertext` (base64 parts). The first configured key encrypts; any
 * configured key decrypts, so keys can be rotated.
 */
@Injectable()
export class SecretBox {
  private readonly keys: { id: string; key: Buffer }[];

  constructor(config: AppConfig) {
    this.keys = config.secrets.credentialKeys;
  }

  seal(plaintext: string): string {
    const { id, key } = this.keys[0];
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(id));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [id, iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join(':');
  }

  open(sealed: string): string {
    const [id, iv, tag, data] = sealed.split(':');
    const entry = this.keys.find((k) => k.id === id);
    if (!entry) throw new Error(`No encryption key with id ${id} is configured`);
    const decipher = createDecipheriv('aes-256-gcm', entry.key, Buffer.from(iv, 'base64'));
    decipher.setAAD(Buffer.from(id));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
  }
}
