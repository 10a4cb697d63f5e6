import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { OAuthClientEntity } from './oauth-client.entity';

/**
 * Every statement on `oauth_clients` (habit 15). Statements go through the transaction the context
 * carries (MetadataTransactions): inside its withTransaction they join it, outside they run on their
 * own.
 */
@Injectable()
export class OAuthClientsRepository {
  constructor(private readonly txHost: MetadataTransactions) {}

  private get repo(): Repository<OAuthClientEntity> {
    return this.txHost.tx.getRepository(OAuthClientEntity);
  }

  /** Registers a public client unless a client with its id exists (whatever it looks like now). */
  async insertPublicIfAbsent(client: {
    clientId: string;
    name: string;
    redirectUris: readonly string[];
  }): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO oauth_clients (client_id, name, redirect_uris, is_public)
       VALUES ($1, $2, $3, true) ON CONFLICT (client_id) DO NOTHING`,
      [client.clientId, client.name, client.redirectUris],
    );
  }

  /** The client with this id, with what authenticating it needs. */
  find(
    clientId: string,
  ): Promise<Pick<
    OAuthClientEntity,
    'clientId' | 'name' | 'redirectUris' | 'isPublic' | 'developerId' | 'secretHash'
  > | null> {
    return this.repo.findOne({
      select: { clientId: true, name: true, redirectUris: true, isPublic: true, developerId: true, secretHash: true },
      where: { clientId },
    });
  }

  exists(clientId: string): Promise<boolean> {
    return this.repo.exists({ where: { clientId } });
  }

  save(row: Partial<OAuthClientEntity>): Promise<OAuthClientEntity> {
    return this.repo.save(this.repo.create(row));
  }
}
