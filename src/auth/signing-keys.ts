import { Injectable } from '@nestjs/common';
import { createHash, createPrivateKey, createPublicKey, JsonWebKey, KeyObject } from 'node:crypto';
import { AppConfig } from '../config/app-config';

/**
 * The RS256 key pair that signs access tokens, parsed once at boot: verification gets a prebuilt
 * KeyObject (jsonwebtoken would otherwise re-parse a PEM on every request).
 */
@Injectable()
export class SigningKeys {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly keyId: string;
  readonly algorithm = 'RS256' as const;

  constructor(config: AppConfig) {
    this.privateKey = createPrivateKey(config.secrets.jwtPrivateKeyPem);
    this.publicKey = createPublicKey(this.privateKey);
    const spki = this.publicKey.export({ type: 'spki', format: 'der' });
    this.keyId = createHash('sha256').update(spki).digest('base64url').slice(0, 16);
  }

  /** The JSON Web Key Set published at /.well-known/jwks.json. */
  jwks(): { keys: (JsonWebKey & { kid: string; alg: string; use: string })[] } {
    return {
      keys: [{ ...this.publicKey.export({ format: 'jwk' }), kid: this.keyId, alg: this.algorithm, use: 'sig' }],
    };
  }
}
