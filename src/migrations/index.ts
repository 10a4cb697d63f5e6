import { InitialSchema1795252276538 } from './1795252276538-InitialSchema';
import { ComputeSubscriptionsBilling1795254361542 } from './1795254361542-ComputeSubscriptionsBilling';
import { DataPlaneFleet1795448293373 } from './1795448293373-DataPlaneFleet';

/** Every migration, in order. `npm run migration:generate -- src/migrations/Name` writes new ones; list them here. */
export const MIGRATIONS: (new () => object)[] = [
  InitialSchema1795252276538,
  ComputeSubscriptionsBilling1795254361542,
  DataPlaneFleet1795448293373,
];
