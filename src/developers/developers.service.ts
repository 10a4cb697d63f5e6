import { setTimeout as delay } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isEmail } from 'class-validator';
import { EMAIL_ADDRESS_RULE } from './email-address';
import { DataSource } from 'typeorm';
import { ApiException } from '../common/errors/api-exception';
import { ErrorCode } from '../common/errors/error-code';
import { needsRehash } from '../common/crypto/password-hasher';
import { SecretHasher } from '../common/crypto/secret-hasher';
import { randomToken } from '../common/crypto/tokens';
import { isUuid } from '../common/http/uuid';
import { DatabaseIdsCache } from './database-ids-cache';
import type { OwnWorkspaces } from '../auth/authentication-reads';
import { type PreparedRead, readRows } from '../database/hot-query';
import { prefixedDatabase, prefixedDatabaseColumns } from '../databases/database-rows';
import type { DatabaseEntity } from '../databases/database.entity';
import { toWorkspace, type WorkspaceRow } from '../workspaces/workspace-rows';
import type { WorkspaceEntity } from '../workspaces/workspace.entity';
import { AccountLoginAttempts } from './account-login-attempts';
import { CheckDuration } from './check-duration';
import { DeveloperKind } from './developer.entity';
import { DevelopersRepository, type DeveloperIdentity } from './developers.repository';

export type { DeveloperIdentity };

export interface NewDeveloper {
  email: string;
  kind: DeveloperKind;
  /** Required for HUMAN developers, refused for API ones (they authenticate with their OAuth client). */
  password?: string;
}

export const MIN_PASSWORD_LENGTH = 8;
const MAX_PASSWORD_LENGTH = 1024;

/** E-mails are compared case-insensitively: they are stored lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * findActiveWithWorkspace's statement, without and with the database (see there): sent on nearly
 * every request, so it is made once and kept prepared (PreparedRead).
 */
function activeWithWorkspace(withDatabase: boolean): PreparedRead {
  const name = withDatabase ? 'auth_workspace_database' : 'auth_workspace';
  const text = `SELECT d.id, d.email, d.kind,
              w.id AS workspace_id, w.name, w.slug, w.billing_customer_id, w.created${
                withDatabase ? `, ${prefixedDatabaseColumns('db')}` : ''
              }
         FROM developers d
         LEFT JOIN (workspace_members m JOIN workspaces w ON w.id = m.workspace_id)
                ON m.developer_id = d.id AND w.slug = $2${
                  withDatabase
                    ? `
         LEFT JOIN LATERAL (SELECT * FROM databases
                             WHERE workspace_id = w.id AND name = $3 AND finalized IS NULL
                             ORDER BY deleted DESC NULLS FIRST LIMIT 1) db ON true`
                    : ''
                }
        WHERE d.id = $1 AND d.deleted IS NULL`;
  return { name, text };
}
const ACTIVE_WITH_WORKSPACE = activeWithWorkspace(false);
const ACTIVE_WITH_WORKSPACE_AND_DATABASE = activeWithWorkspace(true);

/** findActiveWithWorkspaces's statement (see there): `/developers/me`, kept prepared (PreparedRead). */
const DEVELOPER_WITH_WORKSPACES: PreparedRead = {
  name: 'developer_with_workspaces',
  text: `SELECT d.id, d.email, d.kind,
          w.id AS workspace_id, w.name, w.slug, w.billing_customer_id, w.created, w.databases_version,
          -- NULL when the process remembers this workspace's ids at its current version ($2, $3:
          -- see DatabaseIdsCache). Otherwise aggregated from an ordered subquery (nothing else at its
          -- level), which keeps the order and lets PostgreSQL read the live-databases index in order
          -- instead of sorting. As 16 bytes an id (uuid_send into one bytea), which withUuidArray
          -- writes out as JSON: at 100k ids this took PostgreSQL about a third of the time that
          -- aggregating their text did (string_agg(id::text, '","'), 80-105 ms against 35-40 ms with
          -- pg's parsing included, this machine), most of it in copying the text's megabytes.
          CASE WHEN (w.id, w.databases_version) IN (SELECT * FROM unnest($2::uuid[], $3::bigint[])) THEN NULL
               ELSE (SELECT string_agg(uuid_send(x.id), '')
                       FROM (SELECT id FROM databases
                              WHERE workspace_id = w.id AND deleted IS NULL
                              ORDER BY created, id) x)
          END AS database_ids
       FROM developers d
       LEFT JOIN (workspace_members m JOIN workspaces w ON w.id = m.workspace_id) ON m.developer_id = d.id
      WHERE d.id = $1 AND d.deleted IS NULL
      ORDER BY w.created ASC, w.id ASC`,
};

const NO_IDS = new Uint8Array(0);

/** PostgreSQL text cannot hold a NUL character, so such an e-mail address matches nobody. */
function isStorableText(value: string): boolean {
  return !value.includes('\0');
}

@Injectable()
export class DevelopersService {
  /** Verified against when no developer matches, so a wrong e-mail costs as much time as a wrong password. */
  private decoyHash?: Promise<string>;
  private readonly checks = new CheckDuration();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly developers: DevelopersRepository,
    private readonly databaseIds: DatabaseIdsCache,
    private readonly hasher: SecretHasher,
    private readonly loginAttempts: AccountLoginAttempts,
  ) {}

  /**
   * The developer if not deleted (on every authenticated request: see DevelopersRepository.findActive);
   * in the transaction the context carries, if any.
   */
  async findActive(id: string): Promise<DeveloperIdentity | null> {
    if (!isUuid(id)) return null;
    return this.developers.findActive(id);
  }

  /**
   * What a workspace-scoped request needs before anything else, in one indexed statement instead of
   * two or three: the developer if not deleted; the workspace with that slug if they are a member of
   * it; and, when `databaseName` is given, the database that operations on that name act on (see
   * DatabasesService.findOperable, whose rule this repeats). `developer` is null when the developer
   * is gone; `workspace` is null when there is no such workspace or they are not a member (callers
   * must not tell these apart); `database` is null when the workspace has no such database.
   */
  async findActiveWithWorkspace(
    id: string,
    slug: string,
    databaseName?: string,
  ): Promise<{
    developer: DeveloperIdentity | null;
    workspace: WorkspaceEntity | null;
    database?: DatabaseEntity | null;
  }> {
    if (!isUuid(id)) return { developer: null, workspace: null };
    const withDatabase = databaseName !== undefined;
    const rows = await readRows<
      DeveloperIdentity & { workspace_id: string | null } & Omit<WorkspaceRow, 'id'> & Record<string, unknown>
    >(
      this.dataSource,
      withDatabase ? ACTIVE_WITH_WORKSPACE_AND_DATABASE : ACTIVE_WITH_WORKSPACE,
      withDatabase ? [id, slug.toLowerCase(), databaseName] : [id, slug.toLowerCase()],
    );
    const row = rows[0];
    if (!row) return { developer: null, workspace: null };
    return {
      developer: { id: row.id, email: row.email, kind: row.kind },
      workspace: row.workspace_id ? toWorkspace({ ...row, id: row.workspace_id }) : null,
      ...(withDatabase ? { database: prefixedDatabase(row) } : {}),
    };
  }

  /**
   * The developer if not deleted, with their workspaces (oldest first) and each workspace's live
   * database ids (oldest first, 16 bytes each), in one statement: `/developers/me` in one round trip.
   * A big workspace's ids come from DatabaseIdsCache while its `databases_version` has not moved.
   */
  async findActiveWithWorkspaces(
    id: string,
  ): Promise<{ developer: DeveloperIdentity; workspaces: OwnWorkspaces } | null> {
    if (!isUuid(id)) return null;
    const remembered = this.databaseIds.snapshot();
    const rows = await readRows<
      DeveloperIdentity & {
        workspace_id: string | null;
        databases_version: string | null;
        database_ids: Buffer | null;
      } & Omit<WorkspaceRow, 'id'>
    >(this.dataSource, DEVELOPER_WITH_WORKSPACES, [
      id,
      [...remembered.keys()],
      [...remembered.values()].map((r) => r.version),
    ]);
    if (!rows[0]) return null;
    const { id: developerId, email, kind } = rows[0];
    const idsOf = (workspaceId: string, version: string, aggregated: Buffer | null): Uint8Array => {
      if (aggregated) {
        this.databaseIds.remember(workspaceId, version, aggregated);
        return aggregated;
      }
      // No ids sent back: none, or the remembered ones are current (the statement compared versions).
      const known = remembered.get(workspaceId);
      return known?.version === version ? this.databaseIds.reuse(workspaceId, known) : NO_IDS;
    };
    return {
      developer: { id: developerId, email, kind },
      workspaces: rows.flatMap((row) =>
        row.workspace_id
          ? [
              {
                workspace: toWorkspace({ ...row, id: row.workspace_id }),
                databaseIds: idsOf(row.workspace_id, row.databases_version!, row.database_ids),
              },
            ]
          : [],
      ),
    };
  }

  /** Active developers by id (the order of the ids is kept). */
  async findActiveMany(ids: string[]): Promise<DeveloperIdentity[]> {
    if (!ids.length) return [];
    const rows = await this.developers.findActiveMany(ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }

  async findActiveByEmail(email: string): Promise<DeveloperIdentity | null> {
    if (!isStorableText(email)) return null;
    return this.developers.findActiveByEmail(normalizeEmail(email));
  }

  /**
   * Creates a developer (inside the transaction the context carries, if any). The password is
   * stored only as a scrypt hash.
   */
  async create(input: NewDeveloper): Promise<DeveloperIdentity> {
    const email = normalizeEmail(input.email);
    if (!isEmail(email, EMAIL_ADDRESS_RULE) || email.length > 320) {
      throw new ApiException(
        ErrorCode.BadRequest,
        `${input.email} is not a valid e-mail address (no quoted local part)`,
      );
    }
    if (input.kind === DeveloperKind.Human) {
      // Characters (code points), not UTF-16 units: an emoji is one character, not two.
      const length = input.password === undefined ? 0 : [...input.password].length;
      if (length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH) {
        throw new ApiException(
          ErrorCode.BadRequest,
          `A HUMAN developer needs a password of ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
        );
      }
    } else if (input.password !== undefined) {
      throw new ApiException(
        ErrorCode.BadRequest,
        'An API developer has no password: it authenticates with its client',
      );
    }
    if (await this.developers.existsWithEmail(email)) {
      throw new ApiException(ErrorCode.DuplicateEntity, `A developer with e-mail ${email} already exists`);
    }
    const passwordHash = input.password !== undefined ? await this.hasher.hash(input.password) : null;
    const saved = await this.developers.create({ email, kind: input.kind, passwordHash });
    return { id: saved.id, email: saved.email, kind: saved.kind };
  }

  /**
   * The HUMAN developer with this e-mail and password, or null. Unknown e-mails, API developers and
   * deleted developers fail like a wrong password, and take as long. 429 once the e-mail's attempts
   * are spent (AccountLoginAttempts), 503 when too many hashes are under way (SecretHasher).
   */
  async authenticate(email: string, password: string): Promise<DeveloperIdentity | null> {
    const account = isStorableText(email) ? normalizeEmail(email) : null;
    if (account) await this.loginAttempts.take(account);
    const developer = account ? await this.developers.findActiveWithPasswordHash(account) : null;
    const stored = developer?.passwordHash ?? (await this.decoy());
    const started = performance.now();
    const matches = await this.hasher.verify(password, stored);
    const elapsed = performance.now() - started;
    if (!needsRehash(stored)) this.checks.record(elapsed);
    else if (!matches) {
      // A hash with older (cheaper) parameters checks faster than the decoy: a wrong password there
      // takes as long as an unknown e-mail's (see CheckDuration); the first, before any was timed,
      // is checked against the decoy too.
      const wait = this.checks.remaining(elapsed);
      if (wait === undefined) await this.hasher.verify(password, await this.decoy());
      else await delay(wait);
    }
    if (!developer || !developer.passwordHash || developer.kind !== DeveloperKind.Human || !matches) return null;
    if (account) await this.loginAttempts.clear(account);
    if (needsRehash(developer.passwordHash)) await this.rehash(developer.id, developer.passwordHash, password);
    return { id: developer.id, email: developer.email, kind: developer.kind };
  }

  /**
   * Upgrades a hash made with older parameters, now that the password is known to be right. Only
   * if the stored hash is still the one checked: a password changed meanwhile wins. Skipped when the
   * hashing gate is full (SecretHasher's 503): a right password never fails for an optimisation.
   */
  private async rehash(id: string, checked: string, password: string): Promise<void> {
    try {
      await this.developers.replacePasswordHash(id, checked, await this.hasher.hash(password));
    } catch (err) {
      // Only an upgrade: the password was right, so the sign-in goes on (the next one tries again).
      if (!(err instanceof ApiException)) throw err;
    }
  }

  private decoy(): Promise<string> {
    // A refused attempt (the hashing gate full) is not kept: the next call makes the decoy again.
    this.decoyHash ??= this.hasher.hash(randomToken()).catch((err: unknown) => {
      this.decoyHash = undefined;
      throw err;
    });
    return this.decoyHash;
  }
}
