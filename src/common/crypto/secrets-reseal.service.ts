import { Injectable } from '@nestjs/common';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { SecretBox } from './secret-box';

/** Every column holding a secret sealed with SecretBox, by table. */
const SEALED_COLUMNS = [
  { table: 'credentials', column: 'password_ciphertext' },
  { table: 'data_plane_servers', column: 'admin_url_ciphertext' },
  { table: 'invites', column: 'code_ciphertext' },
] as const;

const BATCH = 500;

export interface ResealOutcome {
  keyId: string;
  /** Per table: rows sealed again with the sealing key. */
  resealed: Record<string, number>;
  /** Per table: rows sealed with a key no longer configured (left as they are). */
  unreadable: Record<string, number>;
  /**
   * Per table: rows still sealed with another key at the end (the unreadable ones, and any a
   * process still sealing with an old key wrote meanwhile): the old keys may go once all are 0.
   */
  remaining: Record<string, number>;
}

/**
 * Seals every stored secret sealed with another key again with the sealing key (the first of
 * CREDENTIAL_ENCRYPTION_KEYS), so the others can then be removed from the configuration: the
 * `secrets:reseal` operator command, run after putting a new key first. Each row is rewritten only
 * while it still holds what was read (a row changed meanwhile is sealed with the new key already, or
 * gone), in batches of its own statements, so it runs beside a live service.
 *
 * One maintenance pass over three aggregates' tables, an exception to a repository per aggregate:
 * it knows each table only by the sealed column it rewrites.
 */
@Injectable()
export class SecretsReseal {
  constructor(
    private readonly txHost: MetadataTransactions,
    private readonly box: SecretBox,
  ) {}

  async run(): Promise<ResealOutcome> {
    const keyId = this.box.sealingKeyId;
    const outcome: ResealOutcome = { keyId, resealed: {}, unreadable: {}, remaining: {} };
    for (const { table, column } of SEALED_COLUMNS) {
      let resealed = 0;
      let unreadable = 0;
      let after = '00000000-0000-0000-0000-000000000000';
      for (;;) {
        const rows = await this.txHost.tx.query<{ id: string; sealed: string }[]>(
          `SELECT id::text, ${column} AS sealed FROM ${table}
            WHERE id > $1::uuid AND ${column} IS NOT NULL AND NOT starts_with(${column}, $2)
            ORDER BY id LIMIT ${BATCH}`,
          [after, `${keyId}:`],
        );
        for (const { id, sealed } of rows) {
          let plaintext: string;
          try {
            plaintext = this.box.open(sealed);
          } catch {
            unreadable++;
            continue;
          }
          const [, count] = await this.txHost.tx.query<[unknown, number]>(
            `UPDATE ${table} SET ${column} = $3 WHERE id = $1::uuid AND ${column} = $2`,
            [id, sealed, this.box.seal(plaintext)],
          );
          resealed += count;
        }
        if (rows.length < BATCH) break;
        after = rows[rows.length - 1].id;
      }
      outcome.resealed[table] = resealed;
      outcome.unreadable[table] = unreadable;
      const [{ n }] = await this.txHost.tx.query<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM ${table} WHERE ${column} IS NOT NULL AND NOT starts_with(${column}, $1)`,
        [`${keyId}:`],
      );
      outcome.remaining[table] = n;
    }
    return outcome;
  }
}
