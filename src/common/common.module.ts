import { Global, Module } from '@nestjs/common';
import { SecretBox } from './crypto/secret-box';
import { SecretsReseal } from './crypto/secrets-reseal.service';

@Global()
@Module({ providers: [SecretBox, SecretsReseal], exports: [SecretBox, SecretsReseal] })
export class CommonModule {}
