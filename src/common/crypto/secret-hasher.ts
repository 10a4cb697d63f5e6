import { HttpStatus, Injectable, Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { ConcurrencyGate, GateFullError } from '../concurrency-gate';
import { ApiException } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';
import { hashSecret, verifySecret } from './password-hasher';

/**
 * Password and client-secret hashing (scrypt, 128 MiB and a few hundred ms of a libuv thread
 * each) behind one gate per process: PASSWORD_HASHING_CONCURRENCY at a time and
 * PASSWORD_HASHING_QUEUE more waiting. Unauthenticated requests (the login and join forms, the
 * token endpoint) can ask for a hash, so without a bound a flood of them from many addresses would
 * hold 128 MiB per libuv thread and queue without end in the pool that also resolves host names,
 * stalling every new connection of the process. Past the bound: 503 with Retry-After, no hashing.
 */
@Injectable()
export class SecretHasher {
  private readonly gate: ConcurrencyGate;

  constructor(config: AppConfig) {
    this.gate = new ConcurrencyGate(config.env.PASSWORD_HASHING_CONCURRENCY, config.env.PASSWORD_HASHING_QUEUE);
  }

  hash(secret: string): Promise<string> {
    return this.gated(() => hashSecret(secret));
  }

  verify(secret: string, stored: string | null | undefined): Promise<boolean> {
    return this.gated(() => verifySecret(secret, stored));
  }

  private async gated<T>(task: () => Promise<T>): Promise<T> {
    try {
      return await this.gate.run(task);
    } catch (err) {
      if (!(err instanceof GateFullError)) throw err;
      throw new ApiException(
        ErrorCode.ServerError,
        'Too many sign-ins are being checked right now; retry in a second',
        {
          status: HttpStatus.SERVICE_UNAVAILABLE,
          headers: { 'Retry-After': '1', 'Cache-Control': 'no-store' },
        },
      );
    }
  }
}

/** One SecretHasher (one gate) per process, for every module that hashes. */
@Module({ providers: [SecretHasher], exports: [SecretHasher] })
export class SecretHasherModule {}
