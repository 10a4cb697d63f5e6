import { MonthPricesEntity } from '../billing/month-prices.entity';
import { RatedLineEntity } from '../billing/rated-line.entity';
import { ComputeChangeEntity } from '../compute/compute-change.entity';
import { ComputeInstanceEntity } from '../compute/compute-instance.entity';
import { ComputeTypeEntity } from '../compute/compute-type.entity';
import { ComputeUsagePeriodEntity } from '../compute/compute-usage-period.entity';
import { AuthorizationCodeEntity } from '../auth/oauth/authorization-code.entity';
import { OAuthClientEntity } from '../auth/oauth/oauth-client.entity';
import { RefreshTokenEntity } from '../auth/oauth/refresh-token.entity';
import { CredentialRotationEntity } from '../credentials/credential-rotation.entity';
import { CredentialEntity } from '../credentials/credential.entity';
import { DataPlaneServerEntity } from '../data-plane/data-plane-server.entity';
import { DatabaseEntity } from '../databases/database.entity';
import { PooledDatabaseEntity } from '../databases/pooled-database.entity';
import { DeveloperEntity } from '../developers/developer.entity';
import { DatabaseClaimEntity } from '../instant-databases/database-claim.entity';
import { StorageUsageEntity } from '../insights/storage-usage.entity';
import { TelemetrySampleEntity } from '../insights/telemetry-sample.entity';
import { InviteSendEntity } from '../invites/invite-send.entity';
import { InviteEntity } from '../invites/invite.entity';
import { WorkspaceMemberEntity } from '../workspaces/workspace-member.entity';
import { SubscriptionEntity } from '../subscriptions/subscription.entity';
import { WorkspaceEntity } from '../workspaces/workspace.entity';

/** Every entity of the metadata database, listed once for the app and the migration CLI. */
export const ENTITIES = [
  DeveloperEntity,
  OAuthClientEntity,
  AuthorizationCodeEntity,
  RefreshTokenEntity,
  WorkspaceEntity,
  WorkspaceMemberEntity,
  InviteEntity,
  InviteSendEntity,
  DataPlaneServerEntity,
  DatabaseEntity,
  PooledDatabaseEntity,
  CredentialEntity,
  CredentialRotationEntity,
  ComputeTypeEntity,
  ComputeInstanceEntity,
  ComputeChangeEntity,
  ComputeUsagePeriodEntity,
  SubscriptionEntity,
  RatedLineEntity,
  MonthPricesEntity,
  DatabaseClaimEntity,
  TelemetrySampleEntity,
  StorageUsageEntity,
];
