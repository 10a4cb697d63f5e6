import type { DeveloperKind } from '../developers/developer.entity';

/** What a request knows about its caller once the token is verified. */
export interface AuthenticatedDeveloper {
  id: string;
  email: string;
  kind: DeveloperKind;
  scope: string;
  clientId?: string;
}
