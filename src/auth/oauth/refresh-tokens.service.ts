import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, IsNull, Repository } from 'typeorm';
import { randomToken, sha256 } from '../../common/crypto/tokens';
import { AppConfig } from '../../config/app-config';
import { RefreshTokenEntity } from './refresh-token.entity';

export interface RefreshGrant {
  familyId: string;
  clientId: string;
  developerId: string;
  scope: string;
}

export type RotationResult =
  { status: 'rotated'; grant: RefreshGrant; refreshToken: string } | { status: 'rejected'; reason: string };

/**
 * Opaque refresh tokens (only SHA-256 hashes are stored), rotated on every use. A token used
 * twice means it leaked: the whole family, the legitimate holder's current token included, is revoked.
 */
@Injectable()
export class RefreshTokensService {
  constructor(
    @InjectRepository(RefreshTokenEntity) private readonly tokens: Repository<RefreshTokenEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {}

  async issue(grant: RefreshGrant, manager?: EntityManager): Promise<string> {
    const token = randomToken(32);
    const repo = manager ? manager.getRepository(RefreshTokenEntity) : this.tokens;
    await repo.insert({
      tokenHash: sha256(token),
      ...grant,
      expiresAt: new Date(Date.now() + this.config.env.REFRESH_TOKEN_TTL_SECONDS * 1000),
      usedAt: null,
      revokedAt: null,
    });
    return token;
  }

  /** Exchanges a refresh token presented by `clientId` for its successor in the same family. */
  async rotate(token: string, clientId: string): Promise<RotationResult> {
    const current = await this.tokens.findOne({ where: { tokenHash: sha256(token) } });
    if (!current) return { status: 'rejected', reason: 'Unknown refresh token' };
    if (current.clientId !== clientId)
      return { status: 'rejected', reason: 'The refresh token was issued to another client' };
    if (current.revokedAt) return { status: 'rejected', reason: 'The refresh token has been revoked' };
    if (current.usedAt) return this.reused(current.familyId);
    if (current.expiresAt.getTime() <= Date.now())
      return { status: 'rejected', reason: 'The refresh token has expired' };

    const grant: RefreshGrant = {
      familyId: current.familyId,
      clientId: current.clientId,
      developerId: current.developerId,
      scope: current.scope,
    };
    const successor = await this.dataSource.transaction(async (manager) => {
      // Only one of two concurrent rotations can claim the token; the other is a reuse.
      const claimed = await manager
        .createQueryBuilder()
        .update(RefreshTokenEntity)
        .set({ usedAt: () => 'now()' })
        .where('id = :id AND used_at IS NULL AND revoked_at IS NULL', { id: current.id })
        .execute();
      return claimed.affected ? this.issue(grant, manager) : null;
    });
    if (!successor) return this.reused(current.familyId);
    return { status: 'rotated', grant, refreshToken: successor };
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.tokens.update({ familyId, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
  }

  private async reused(familyId: string): Promise<RotationResult> {
    await this.revokeFamily(familyId);
    return { status: 'rejected', reason: 'The refresh token was already used; its family has been revoked' };
  }
}
