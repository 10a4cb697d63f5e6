import { plainToInstance, Transform } from 'class-transformer';
import { createPrivateKey } from 'node:crypto';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateBy,
  ValidateIf,
  validateSync,
} from 'class-validator';
import { isPublicHost, MAX_SERVER_DATABASES, PUBLIC_HOST_FORMAT } from './data-plane-server-values';
import { decimalIntegerOrAsIs, parseDecimalInteger, parseDecimalNumber } from './decimal-integer';
import { ALL_REGIONS } from './regions';
import { parseCredentialKeys } from './secrets';
import { parseTrustProxy } from './trust-proxy';

/**
 * Numbers are read in decimal only. An empty variable never reaches here (it means unset, as an
 * absent one does: see validateEnvironment); a blank or otherwise unreadable one stays as given, so
 * @IsInt/@IsNumber name it, as with booleans and plan limits (Number() read ' ' as 0 and '0x50' as 80).
 */
const toInt = ({ value }: { value: unknown }) => decimalIntegerOrAsIs(value);
const toNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? (parseDecimalNumber(value) ?? value) : value;
const TRUE_WORDS = ['1', 'true', 'yes', 'on'];
const FALSE_WORDS = ['0', 'false', 'no', 'off'];
/** A boolean it cannot read stays as given, so @IsBoolean names it (a typo must not quietly mean false). */
const toBool = ({ value }: { value: unknown }) => {
  if (value === undefined || value === '' || typeof value !== 'string') return value;
  const word = value.trim().toLowerCase();
  return TRUE_WORDS.includes(word) ? true : FALSE_WORDS.includes(word) ? false : value;
};
/** A plan limit: a count, or `unlimited`. */
export type PlanLimit = number | 'unlimited';
const toLimit = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const word = value.trim().toLowerCase();
  return word === 'unlimited' ? word : word === '' ? undefined : (parseDecimalInteger(word) ?? value);
};
const isCount = (_: object, value: unknown) => value !== 'unlimited';
/**
 * A plan limit variable: a whole number from 0, or `unlimited`. Composed by hand, not with Nest's
 * applyDecorators: the CLI reads this file before @nestjs/common has loaded (require(esm)).
 */
const IsPlanLimit = (): PropertyDecorator => (target, property) => {
  for (const decorate of [
    Transform(toLimit),
    ValidateIf(isCount),
    IsInt({ message: '$property must be a whole number or unlimited' }),
    Min(0),
  ])
    decorate(target, property);
};
/** Most TTLs and grace periods: ten years, far inside JavaScript's Date range (a larger one would make dates invalid). */
const TEN_YEARS_SECONDS = 10 * 365 * 86400;
/**
 * URL variables: hosts may have underscores (Docker Compose service names such as `control_db`),
 * which pg, ioredis and nodemailer reach; validator.js refuses them by default.
 */
const url = { require_tld: false, require_protocol: true, allow_underscores: true };
const dbUrl = { ...url, protocols: ['postgres', 'postgresql'] };
/** A host customers connect to (see data-plane-server-values.ts); the CLI's `--public-host` has the same rule. */
const IsPublicHost = (): PropertyDecorator => (target, property) => {
  for (const decorate of [
    IsOptional(),
    ValidateBy({
      name: 'isPublicHost',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && isPublicHost(value),
        defaultMessage: () => `$property must be ${PUBLIC_HOST_FORMAT}`,
      },
    }),
  ])
    decorate(target, property);
};

/**
 * Every environment variable the service reads, with its default. Validated once at boot;
 * the process exits listing every variable that is wrong.
 */
export class EnvironmentVariables {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  /** The worker's own HTTP port: /health/live, /health/ready and /metrics (0 picks a free port). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  WORKER_PORT = 3001;

  @IsUrl({ ...url, protocols: ['http', 'https'] })
  PUBLIC_URL = 'http://localhost:3000';

  /**
   * Express's `trust proxy`: which peers' `X-Forwarded-For` gives the client's address (the
   * per-address rate limits go by it). A comma-separated list of proxies (`loopback`, `linklocal`,
   * `uniquelocal`, addresses, CIDR ranges), a number of hops, `true` (any peer: only when every
   * connection comes through the proxy) or `false`.
   */
  @IsString()
  TRUST_PROXY = 'loopback';

  @IsUrl(dbUrl)
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/control_plane';

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  DATABASE_POOL_SIZE = 4;

  /**
   * `lock_timeout` of every metadata session: no statement waits longer for a row or advisory lock
   * (the request answers 503, a job retries). 0: wait without limit.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600000)
  DATABASE_LOCK_TIMEOUT_MS = 10000;

  /**
   * `idle_in_transaction_session_timeout` of every metadata session: the server ends a session that
   * waits longer inside a transaction (a process stopped or a network gone silent mid-transaction),
   * letting its locks go. 0: no limit.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3600000)
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS = 30000;

  /** How long a starting process waits for the metadata PostgreSQL to accept connections (0: no wait). */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3600)
  DATABASE_BOOT_WAIT_SECONDS = 60;

  @IsUrl({ ...url, protocols: ['redis', 'rediss'] })
  REDIS_URL = 'redis://127.0.0.1:6379';

  /** Prefix of every Bull key in Redis; lets several deployments (or test runs) share one Redis. */
  @IsString()
  @MinLength(1)
  QUEUE_PREFIX = 'bull';

  @IsUrl({ ...url, protocols: ['smtp', 'smtps'] })
  SMTP_URL = 'smtp://127.0.0.1:1025';

  @IsString()
  @MinLength(3)
  MAIL_FROM = 'Database Control Plane <no-reply@localhost>';

  @IsUrl(dbUrl)
  DATA_PLANE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

  @IsOptional()
  @IsUrl(dbUrl)
  DATA_PLANE_URL_AWS_US_WEST_2?: string;

  @IsOptional()
  @IsUrl(dbUrl)
  DATA_PLANE_URL_AWS_EU_CENTRAL_1?: string;

  @IsOptional()
  @IsUrl(dbUrl)
  DATA_PLANE_URL_AZURE_EASTUS?: string;

  /** Host (and port) customers connect to, when it differs from the admin connection's host. */
  @IsPublicHost()
  DATA_PLANE_PUBLIC_HOST?: string;

  /** Per-region public host (and port), for regions whose DATA_PLANE_URL_<REGION> points elsewhere. */
  @IsPublicHost()
  DATA_PLANE_PUBLIC_HOST_AWS_US_WEST_2?: string;

  @IsPublicHost()
  DATA_PLANE_PUBLIC_HOST_AWS_EU_CENTRAL_1?: string;

  @IsPublicHost()
  DATA_PLANE_PUBLIC_HOST_AZURE_EASTUS?: string;

  /**
   * Revoke PUBLIC's CONNECT on the data-plane servers' shared databases (postgres, template1 and the
   * admin URL's database), so credentials can connect only to their own database (and cannot hold
   * template1 open, which would block CREATE DATABASE). The admin role is granted CONNECT first.
   */
  @Transform(toBool)
  @IsBoolean()
  DATA_PLANE_LOCK_SHARED_DATABASES = true;

  /** Capacity (`max_databases`) of a data-plane server registered without one (from DATA_PLANE_URL or `server:add`). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(MAX_SERVER_DATABASES)
  DATA_PLANE_MAX_DATABASES = 1000;

  /**
   * Sessions a customer database accepts at once (its `CONNECTION LIMIT`) without dedicated compute;
   * each running compute instance adds its size's connections on top (see connection-envelope.ts).
   * Keeps one tenant from taking every connection of a shared server from the others and from the
   * control plane. Applied when a database is built, and re-asserted on existing ones by the compute
   * sweep.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(10000)
  DATA_PLANE_DEFAULT_CONNECTION_LIMIT = 20;

  /**
   * Dedicated compute instances a database may have at once (not terminated): each adds its size's
   * connections to the database's limit, so without a bound one database could take every session
   * of its server (PRO, which allows compute, is self-service).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100)
  COMPUTE_MAX_INSTANCES_PER_DATABASE = 4;

  /**
   * Creates and changes of size a database's dedicated compute may have in any 24 hours: each opens a
   * usage period (a billing line) and has the data plane apply an envelope.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  COMPUTE_CHANGES_PER_DATABASE_PER_DAY = 50;

  /** How long a connection attempt to a data-plane server may take before it counts as unavailable. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60000)
  DATA_PLANE_CONNECT_TIMEOUT_MS = 5000;

  /**
   * `statement_timeout` of every data-plane connection: no statement runs longer (dropping a large
   * database with its files is the slowest thing the data plane does).
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600000)
  DATA_PLANE_STATEMENT_TIMEOUT_MS = 10000;

  /**
   * `statement_timeout` for CREATE DATABASE and DROP DATABASE, which only background jobs run (builds,
   * finalizations, warm-pool refills): PostgreSQL may wait for a checkpoint there.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3600000)
  DATA_PLANE_DATABASE_DDL_TIMEOUT_MS = 120000;

  /** `lock_timeout` of every data-plane connection: no statement waits longer for a lock (e.g. a catalog lock). */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600000)
  DATA_PLANE_LOCK_TIMEOUT_MS = 3000;

  /** Prefix of physical database and owner-role names on the data plane (lets test runs share a server). */
  @Matches(/^[a-z][a-z0-9_]{0,19}$/)
  DATA_PLANE_NAME_PREFIX = 'cp_';

  @IsIn(['on', 'off'])
  WORKERS: 'on' | 'off' = 'on';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /** RS256 private key (PEM) that signs access tokens. Required in production. */
  @IsOptional()
  @IsString()
  @MinLength(100)
  JWT_PRIVATE_KEY?: string;

  /**
   * Keys that encrypt stored credential passwords: `id:base64key[,id:base64key...]`, 32-byte keys,
   * the first encrypts, all decrypt (so keys can be rotated). Required in production.
   */
  @IsOptional()
  @IsString()
  @MinLength(10)
  CREDENTIAL_ENCRYPTION_KEYS?: string;

  /** Where development secrets are generated and kept when the two above are not set. */
  @IsString()
  SECRETS_FILE = '.secrets/development.json';

  /**
   * `iss` of access tokens and the OAuth issuer. Defaults to PUBLIC_URL, and may only repeat it:
   * RFC 8414 clients refuse discovery when the issuer is not where the metadata is served.
   */
  @IsString()
  JWT_ISSUER = '';

  @IsString()
  @MinLength(1)
  JWT_AUDIENCE = 'control-plane';

  @Transform(toInt)
  @IsInt()
  @Min(30)
  @Max(86400)
  ACCESS_TOKEN_TTL_SECONDS = 3600;

  @Transform(toInt)
  @IsInt()
  @Min(60)
  @Max(TEN_YEARS_SECONDS)
  REFRESH_TOKEN_TTL_SECONDS = 30 * 86400;

  /** Lifetime of an OAuth authorization code (single-use; the client redeems it within seconds). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(600)
  AUTHORIZATION_CODE_TTL_SECONDS = 300;

  /**
   * Days a refresh token or authorization code is kept after it expired, then deleted by the
   * reconciler. Until then a replay of a used one still revokes its family; after, it is refused
   * as unknown. At least a day, so a replayed code (which lives minutes) still revokes what it granted.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3650)
  OAUTH_EXPIRED_RETENTION_DAYS = 7;

  /** Enables the queue dashboard at /admin/queues (HTTP basic auth, user `operator`). */
  @IsOptional()
  @IsString()
  @MinLength(12)
  OPERATOR_PASSWORD?: string;

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(TEN_YEARS_SECONDS)
  DATABASE_DELETION_GRACE_SECONDS = 86400;

  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(50)
  DATABASE_POOL_TARGET = 2;

  /**
   * Workspaces one developer may belong to when creating another: each is in every answer that
   * describes the developer (/developers/me, each invite's sender), so without a bound one account
   * could grow those answers without end.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(100000)
  WORKSPACES_PER_DEVELOPER = 1000;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(TEN_YEARS_SECONDS)
  INVITE_TTL_SECONDS = 7 * 86400;

  /** Invite e-mails one developer may cause per hour (deleted invites count too). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INVITES_PER_SENDER_PER_HOUR = 50;

  /** Invite e-mails one address may be sent per hour, whoever sends them (deleted invites count too). */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INVITES_PER_RECIPIENT_PER_HOUR = 5;

  /**
   * Invite e-mails the whole service may send per hour, whoever sends them and to whom: accounts cost
   * nothing to make (and can be made through one's own invites), so only this bounds what the
   * service's SMTP relay is made to send.
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INVITES_PER_HOUR = 1000;

  /**
   * Rows a workspace's subscription history may gain in any 24 hours (a start, or a change of level
   * at a new time; the FREE row held from the creation counts, so at least 2: one change a day). Each
   * row is a line rated for its month and read by the history.
   */
  @Transform(toInt)
  @IsInt()
  @Min(2)
  SUBSCRIPTION_CHANGES_PER_DAY = 20;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3600)
  RECONCILE_INTERVAL_SECONDS = 30;

  /**
   * Seconds from the start of a process that runs the queue processors to its first reconcile pass
   * (then one every RECONCILE_INTERVAL_SECONDS): work lost in a crash is taken up when the process
   * is back, not an interval later.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(3600)
  RECONCILE_FIRST_PASS_SECONDS = 5;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  JOB_ATTEMPTS = 8;

  /**
   * Base delay of a failed job's exponential backoff (at most an hour: with 8 attempts the last retry
   * then comes about 5 days after the one before).
   */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3600000)
  JOB_BACKOFF_MS = 2000;

  @Transform(toInt)
  @IsInt()
  @Min(1)
  RATE_LIMIT_AUTH_PER_MINUTE = 20;

  /**
   * Password attempts at one account (by e-mail, existing or not) per hour from any address, counted
   * until one succeeds; then 429 without checking. 0 turns the limit off.
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  RATE_LIMIT_LOGIN_PER_ACCOUNT_PER_HOUR = 30;

  /** Password and client-secret hashes (scrypt, 128 MiB each) computed at once per process. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(64)
  PASSWORD_HASHING_CONCURRENCY = 2;

  /** Hashes waiting for one of those places; beyond them a request gets 503 with Retry-After. */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10000)
  PASSWORD_HASHING_QUEUE = 16;

  /** Monthly price of the PRO subscription level in US dollars, prorated by the part of a month it is held. */
  @Transform(toNumber)
  @IsNumber({ maxDecimalPlaces: 6, allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(100000)
  PRO_MONTHLY_PRICE_USD = 25;

  /**
   * How often the periodic billing sweep re-rates the current and previous month of every workspace
   * (at most 31 days: a longer interval could let a month close without a sweep re-rating it).
   */
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(31 * 86400)
  BILLING_RATING_INTERVAL_SECONDS = 300;

  /** Price in US dollars of one GB (10^9 bytes) held for a whole month (the average size over the month). */
  @Transform(toNumber)
  @IsNumber({ maxDecimalPlaces: 6, allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(100000)
  STORAGE_PRICE_PER_GB_MONTH_USD = 0.125;

  /** GB-months of storage the FREE level includes each month (prorated by the part of the month it is held). */
  @Transform(toNumber)
  @IsNumber({ maxDecimalPlaces: 6, allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(1000000)
  FREE_STORAGE_INCLUDED_GB = 1;

  /** How often each data-plane server is sampled for insights and storage (one pass per server). */
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(3600)
  TELEMETRY_INTERVAL_SECONDS = 60;

  /** Insights samples older than this are pruned. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3660)
  TELEMETRY_RETENTION_DAYS = 31;

  /** Time a ready probe (connect and SELECT 1) may take before the database counts as down. */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60000)
  TELEMETRY_PROBE_TIMEOUT_MS = 3000;

  /** Ready probes a pass runs at once on one server. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(256)
  TELEMETRY_PROBE_CONCURRENCY = 16;

  @Transform(toInt)
  @IsInt()
  @Min(1024)
  BODY_LIMIT_BYTES = 100 * 1024;

  /** Live (not deleted) databases a workspace on the FREE level may have; a count or `unlimited`. */
  @IsPlanLimit()
  PLAN_FREE_MAX_DATABASES: PlanLimit = 3;

  @IsPlanLimit()
  PLAN_PRO_MAX_DATABASES: PlanLimit = 'unlimited';

  /** Credentials (not dropped) one database may have on each level. */
  @IsPlanLimit()
  PLAN_FREE_MAX_CREDENTIALS_PER_DATABASE: PlanLimit = 10;

  @IsPlanLimit()
  PLAN_PRO_MAX_CREDENTIALS_PER_DATABASE: PlanLimit = 'unlimited';

  /** Whether `POST /databases/provision` (instant databases without an account) is offered; off, it answers as an unknown route there. */
  @Transform(toBool)
  @IsBoolean()
  INSTANT_DATABASES = true;

  /** Instant databases one client address may provision per hour. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INSTANT_DATABASES_PER_ADDRESS_PER_HOUR = 3;

  /** Instant databases all clients together may provision per hour. */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INSTANT_DATABASES_PER_HOUR = 60;

  /**
   * Unclaimed instant databases alive at once (codes not claimed and not expired), across regions:
   * beyond it 429. Kept well below a server's capacity (DATA_PLANE_MAX_DATABASES), which the hourly
   * limits alone would let unclaimed databases fill over a claim code's life (60 an hour for 24 hours).
   */
  @Transform(toInt)
  @IsInt()
  @Min(1)
  INSTANT_DATABASES_MAX_UNCLAIMED = 200;

  /**
   * How long `POST /databases/provision` waits for its database's build (the lifecycle job's) when
   * the warm pool had none: 503 with Retry-After when it is not READY by then.
   */
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(120000)
  INSTANT_DATABASE_BUILD_WAIT_MS = 30000;

  /** How long a claim code is valid; an unclaimed database is dropped when it expires. */
  @Transform(toInt)
  @IsInt()
  @Min(60)
  @Max(TEN_YEARS_SECONDS)
  INSTANT_DATABASE_CLAIM_TTL_SECONDS = 86400;

  /** Whether a level may have dedicated compute instances. */
  @Transform(toBool)
  @IsBoolean()
  PLAN_FREE_DEDICATED_COMPUTE = false;

  @Transform(toBool)
  @IsBoolean()
  PLAN_PRO_DEDICATED_COMPUTE = true;
}

/** The per-region variables: a name of one of these shapes for a region that does not exist is a typo. */
const REGION_PREFIXES = ['DATA_PLANE_URL_', 'DATA_PLANE_PUBLIC_HOST_'];

export class InvalidEnvironmentError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Reads and validates the environment; throws InvalidEnvironmentError naming each bad variable. */
export function validateEnvironment(raw: Record<string, unknown>): EnvironmentVariables {
  const known = Object.keys(new EnvironmentVariables());
  const relevant = Object.fromEntries(
    Object.entries(raw).filter(
      ([k, v]) => (known.includes(k) || REGION_PREFIXES.some((prefix) => k.startsWith(prefix))) && v !== '',
    ),
  );
  const env = plainToInstance(EnvironmentVariables, relevant, { exposeDefaultValues: true });
  const problems = validateSync(env, { skipMissingProperties: false, forbidUnknownValues: false }).map(
    (e) => `${e.property}: ${Object.values(e.constraints ?? {}).join('; ')}`,
  );
  for (const [name, value] of Object.entries(relevant)) {
    // Only whitespace is no value of any setting (a text setting would take it: a password of spaces).
    if (typeof value === 'string' && value.trim() === '' && !problems.some((p) => p.startsWith(`${name}:`)))
      problems.push(`${name}: is only whitespace; leave it unset (or empty) for its default`);
    const prefix = REGION_PREFIXES.find((p) => name.startsWith(p));
    if (prefix && !known.includes(name)) {
      const overrides = ALL_REGIONS.map((region) => `${prefix}${region}`);
      problems.push(`${name}: no such region; per-region overrides are ${overrides.join(', ')}`);
    }
  }
  if (env.NODE_ENV === 'production') {
    if (!env.JWT_PRIVATE_KEY) problems.push('JWT_PRIVATE_KEY: required when NODE_ENV=production');
    if (!env.CREDENTIAL_ENCRYPTION_KEYS) problems.push('CREDENTIAL_ENCRYPTION_KEYS: required when NODE_ENV=production');
  }
  if (typeof env.JWT_PRIVATE_KEY === 'string' && env.JWT_PRIVATE_KEY.length >= 100) {
    const problem = jwtPrivateKeyProblem(env.JWT_PRIVATE_KEY);
    if (problem) problems.push(`JWT_PRIVATE_KEY: ${problem}`);
  }
  if (typeof env.CREDENTIAL_ENCRYPTION_KEYS === 'string' && env.CREDENTIAL_ENCRYPTION_KEYS.length >= 10) {
    const problem = credentialKeysProblem(env.CREDENTIAL_ENCRYPTION_KEYS);
    if (problem) problems.push(`CREDENTIAL_ENCRYPTION_KEYS: ${problem}`);
  }
  if (typeof env.TRUST_PROXY === 'string' && parseTrustProxy(env.TRUST_PROXY) === null) {
    problems.push(
      'TRUST_PROXY: must be true, false, a number of hops, or a comma-separated list of loopback, linklocal, uniquelocal, addresses and CIDR ranges',
    );
  }
  // A URL that does not parse is named by its own check.
  if (URL.canParse(env.REDIS_URL) && !/^\/?(\d{1,5})?$/.test(new URL(env.REDIS_URL).pathname)) {
    problems.push('REDIS_URL: its path, if any, must be a database number (e.g. redis://127.0.0.1:6379/0)');
  }
  // On the text: a bare `?` or `#` leaves the parsed URL's search and hash empty.
  if (URL.canParse(env.PUBLIC_URL) && /[?#]/.test(env.PUBLIC_URL)) {
    problems.push(
      'PUBLIC_URL: must have no query or fragment (it is the OAuth issuer, RFC 8414, and the base of the links the service sends)',
    );
  }
  const publicUrl = env.PUBLIC_URL.replace(/\/+$/, '');
  if (!env.JWT_ISSUER) env.JWT_ISSUER = publicUrl;
  else if (env.JWT_ISSUER.replace(/\/+$/, '') !== publicUrl) {
    problems.push(
      `JWT_ISSUER: must be PUBLIC_URL (${publicUrl}), where the OAuth metadata is served (RFC 8414 §3.3); leave it unset to follow PUBLIC_URL`,
    );
  } else env.JWT_ISSUER = publicUrl;
  if (problems.length) throw new InvalidEnvironmentError(problems);
  return env;
}

/**
 * The PEM (literal `\\n` allowed, as some orchestrators pass it) must be an RSA private key of 2048
 * bits or more: tokens are RS256, and the signing library refuses smaller RSA keys at every signature.
 */
function jwtPrivateKeyProblem(pem: string): string | null {
  try {
    const key = createPrivateKey(pem.replace(/\\n/g, '\n'));
    if (key.asymmetricKeyType !== 'rsa') return `must be an RSA private key (RS256), not ${key.asymmetricKeyType}`;
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    return bits >= 2048 ? null : `must be an RSA key of 2048 bits or more (RS256), not ${bits}`;
  } catch {
    return 'is not a readable private key in PEM format';
  }
}

function credentialKeysProblem(spec: string): string | null {
  try {
    const ids = parseCredentialKeys(spec).map((k) => k.id);
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    return repeated.length ? `key id ${repeated[0]} is given more than once` : null;
  } catch {
    return 'each entry must be id:base64 of 32 bytes, separated by commas';
  }
}
