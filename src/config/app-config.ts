import { Region } from './regions';
import { EnvironmentVariables, InvalidEnvironmentError, validateEnvironment } from './environment';
import { resolveSecrets, Secrets } from './secrets';

/**
 * The service's typed configuration, read and validated once at boot. Inject `AppConfig`
 * anywhere; secrets live on it but are never serialised (see toJSON).
 */
export class AppConfig {
  readonly env: EnvironmentVariables;
  readonly secrets: Secrets;

  constructor(env: EnvironmentVariables, secrets: Secrets) {
    this.env = env;
    this.secrets = secrets;
  }

  static fromEnvironment(raw: Record<string, unknown> = process.env): AppConfig {
    const env = validateEnvironment(raw);
    let secrets: Secrets;
    try {
      secrets = resolveSecrets(env);
    } catch (err) {
      // Only a generated development secrets file can still be wrong here (the environment's own
      // secrets were validated above).
      throw new InvalidEnvironmentError([`SECRETS_FILE: ${env.SECRETS_FILE} is unusable (${(err as Error).message})`]);
    }
    return new AppConfig(env, secrets);
  }

  get publicUrl(): string {
    return this.env.PUBLIC_URL.replace(/\/+$/, '');
  }

  get workersEnabled(): boolean {
    return this.env.WORKERS === 'on';
  }

  dataPlaneUrl(region: Region): string {
    const override = this.env[`DATA_PLANE_URL_${region}` as keyof EnvironmentVariables];
    return typeof override === 'string' && override ? override : this.env.DATA_PLANE_URL;
  }

  /** The configuration without its secrets: keys and the operator password left out, URLs without passwords. */
  toJSON(): Record<string, unknown> {
    const env: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(this.env)) {
      if (SECRET_SETTINGS.has(key)) continue;
      env[key] = typeof value === 'string' && key.includes('_URL') ? withoutPassword(value) : value;
    }
    return { env };
  }
}

const SECRET_SETTINGS = new Set(['JWT_PRIVATE_KEY', 'CREDENTIAL_ENCRYPTION_KEYS', 'OPERATOR_PASSWORD']);

/** A connection URL without the password it may carry (in its user info or, libpq's way, its query). */
function withoutPassword(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  if (!url.password && !url.searchParams.has('password')) return value;
  if (url.password) url.password = '***';
  if (url.searchParams.has('password')) url.searchParams.set('password', '***');
  return url.toString();
}
