import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'isPublic';

/** Opts a route out of the global bearer-token guard (token endpoint, login page, health, JWKS). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
