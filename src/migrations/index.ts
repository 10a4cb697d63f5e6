import { InitialSchema1795252276538 } from './1795252276538-InitialSchema';
import { ComputeSubscriptionsBilling1795254361542 } from './1795254361542-ComputeSubscriptionsBilling';
import { DataPlaneFleet1795448293373 } from './1795448293373-DataPlaneFleet';
import { InsightsStorage1795448796603 } from './1795448796603-InsightsStorage';
import { InstantDatabases1795449305544 } from './1795449305544-InstantDatabases';
import { InviteEmailLease1795451181933 } from './1795451181933-InviteEmailLease';
import { LiveDatabasesIndex1795462487577 } from './1795462487577-LiveDatabasesIndex';
import { WorkspaceDatabasesVersion1795665981673 } from './1795665981673-WorkspaceDatabasesVersion';
import { StorageUsageByWorkspace1795707811535 } from './1795707811535-StorageUsageByWorkspace';
import { TelemetryScale1795800000000 } from './1795800000000-TelemetryScale';
import { SweepIndexesAndTokenPruning1795800000001 } from './1795800000001-SweepIndexesAndTokenPruning';
import { HistoryIndexes1795800000002 } from './1795800000002-HistoryIndexes';
import { ImplicitSubscription1795800000003 } from './1795800000003-ImplicitSubscription';
import { InviteSends1795800000004 } from './1795800000004-InviteSends';
import { BillingEndAndAmountPrecision1795800000005 } from './1795800000005-BillingEndAndAmountPrecision';
import { InstantDatabaseClaimLimits1795800000006 } from './1795800000006-InstantDatabaseClaimLimits';
import { ImplicitSubscriptionMilliseconds1795800000007 } from './1795800000007-ImplicitSubscriptionMilliseconds';
import { StorageMonthOfBoundarySamples1795800000008 } from './1795800000008-StorageMonthOfBoundarySamples';
import { QueuedDeletionsByWorkspace1795800000009 } from './1795800000009-QueuedDeletionsByWorkspace';
import { LiveCredentialsAndInstancesIndexes1795800000010 } from './1795800000010-LiveCredentialsAndInstancesIndexes';
import { ComputeChanges1795800000011 } from './1795800000011-ComputeChanges';
import { UnbuiltByServer1795800000012 } from './1795800000012-UnbuiltByServer';
import { BillingMonthPrices1795800000013 } from './1795800000013-BillingMonthPrices';
import { RotationIntents1795800000014 } from './1795800000014-RotationIntents';
import { ServerIdentity1795800000015 } from './1795800000015-ServerIdentity';

/** Every migration, in order. `npm run migration:generate -- src/migrations/Name` writes new ones; list them here. */
export const MIGRATIONS: (new () => object)[] = [
  InitialSchema1795252276538,
  ComputeSubscriptionsBilling1795254361542,
  DataPlaneFleet1795448293373,
  InsightsStorage1795448796603,
  InstantDatabases1795449305544,
  InviteEmailLease1795451181933,
  LiveDatabasesIndex1795462487577,
  WorkspaceDatabasesVersion1795665981673,
  StorageUsageByWorkspace1795707811535,
  TelemetryScale1795800000000,
  SweepIndexesAndTokenPruning1795800000001,
  HistoryIndexes1795800000002,
  ImplicitSubscription1795800000003,
  InviteSends1795800000004,
  BillingEndAndAmountPrecision1795800000005,
  InstantDatabaseClaimLimits1795800000006,
  ImplicitSubscriptionMilliseconds1795800000007,
  StorageMonthOfBoundarySamples1795800000008,
  QueuedDeletionsByWorkspace1795800000009,
  LiveCredentialsAndInstancesIndexes1795800000010,
  ComputeChanges1795800000011,
  UnbuiltByServer1795800000012,
  BillingMonthPrices1795800000013,
  RotationIntents1795800000014,
  ServerIdentity1795800000015,
];
