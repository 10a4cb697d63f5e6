import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { SecretHasher } from '../../common/crypto/secret-hasher';
import { randomToken } from '../../common/crypto/tokens';
import { ApiException } from '../../common/errors/api-exception';
import { ErrorCode } from '../../common/errors/error-code';
import { MetadataTransactions } from '../../database/metadata-transactions';
import { DeveloperKind } from '../../developers/developer.entity';
import { DevelopersService, type DeveloperIdentity } from '../../developers/developers.service';
import type { OAuthClientEntity } from './oauth-client.entity';
import { OAuthClientsRepository } from './oauth-clients.repository';
import { redirectUriMatches, redirectUriProblem } from './redirect-uri';

/** The published Nile command-line client: public (PKCE), redirecting to a loopback port of its choice. */
export const NILE_CLI_CLIENT = {
  clientId: 'nilecli',
  name: 'Nile CLI',
  redirectUris: ['http://localhost/callback'],
} as const;

const CLIENT_ID = /^[A-Za-z0-9._~-]{1,200}$/;

export interface NewClient {
  clientId: string;
  name?: string;
  redirectUris: string[];
  isPublic: boolean;
  developerId?: string;
}

/** A registered client as shown to the operator; the secret is returned once, at creation. */
export interface RegisteredClient {
  clientId: string;
  name: string;
  redirectUris: string[];
  public: boolean;
  clientSecret?: string;
}

export type ClientRecord = Pick<
  OAuthClientEntity,
  'clientId' | 'name' | 'redirectUris' | 'isPublic' | 'developerId' | 'secretHash'
>;

@Injectable()
export class OAuthClientsService implements OnApplicationBootstrap {
  constructor(
    private readonly clients: OAuthClientsRepository,
    private readonly txHost: MetadataTransactions,
    private readonly developers: DevelopersService,
    private readonly hasher: SecretHasher,
  ) {}

  /** Registers the Nile CLI on first run; never touches it afterwards (an operator may have changed it). */
  async onApplicationBootstrap(): Promise<void> {
    await this.clients.insertPublicIfAbsent(NILE_CLI_CLIENT);
  }

  /** The registered client with this id; null for any other id (including ids no client could have). */
  async find(clientId: string): Promise<ClientRecord | null> {
    if (!CLIENT_ID.test(clientId)) return null;
    return this.clients.find(clientId);
  }

  /** The registered redirect URI `presented` is allowed by (loopback ports are free), or undefined. */
  allowsRedirect(client: Pick<ClientRecord, 'redirectUris'>, presented: string): boolean {
    return client.redirectUris.some((registered) => redirectUriMatches(registered, presented));
  }

  /** Whether `secret` is this confidential client's secret (scrypt, constant time). */
  verifySecret(client: ClientRecord, secret: string): Promise<boolean> {
    return this.hasher.verify(secret, client.secretHash);
  }

  /**
   * Registers a client (in the transaction the context carries, if any). A confidential client gets
   * a generated secret, stored hashed and returned once.
   */
  async create(input: NewClient): Promise<RegisteredClient> {
    if (!CLIENT_ID.test(input.clientId)) {
      throw new ApiException(ErrorCode.BadRequest, 'client id must be 1 to 200 characters of A-Z a-z 0-9 . _ ~ -');
    }
    const problems = input.redirectUris.map(redirectUriProblem).filter((p): p is string => p !== null);
    if (problems.length) throw new ApiException(ErrorCode.BadRequest, problems.join('; '));
    if (input.isPublic && !input.redirectUris.length) {
      throw new ApiException(ErrorCode.BadRequest, 'A public client needs at least one redirect URI');
    }
    if (await this.clients.exists(input.clientId)) {
      throw new ApiException(ErrorCode.DuplicateEntity, `A client with id ${input.clientId} already exists`);
    }
    const clientSecret = input.isPublic ? undefined : randomToken(32);
    const saved = await this.clients.save({
      clientId: input.clientId,
      name: input.name ?? input.clientId,
      redirectUris: [...new Set(input.redirectUris)],
      isPublic: input.isPublic,
      secretHash: clientSecret ? await this.hasher.hash(clientSecret) : null,
      developerId: input.developerId ?? null,
    });
    return {
      clientId: saved.clientId,
      name: saved.name,
      redirectUris: saved.redirectUris,
      public: saved.isPublic,
      ...(clientSecret ? { clientSecret } : {}),
    };
  }

  /**
   * Creates an API developer and its own confidential client in one transaction; tokens obtained
   * with `client_credentials` act as that developer.
   */
  async createApiDeveloper(email: string): Promise<DeveloperIdentity & { clientId: string; clientSecret: string }> {
    return this.txHost.withTransaction(async () => {
      const developer = await this.developers.create({ email, kind: DeveloperKind.Api });
      const client = await this.create({
        clientId: `api_${randomToken(12)}`,
        name: `API developer ${developer.email}`,
        redirectUris: [],
        isPublic: false,
        developerId: developer.id,
      });
      return { ...developer, clientId: client.clientId, clientSecret: client.clientSecret! };
    });
  }
}
