import { Global, Module } from '@nestjs/common';
import { SecretBox } from './crypto/secret-box';

@Global()
@Module({ providers: [SecretBox], exports: [SecretBox] })
export class CommonModule {}
