import { WorkspaceEntity } from './workspace.entity';

/** A `workspaces` row as raw SQL returns it (the hot paths read workspaces without query building). */
export interface WorkspaceRow {
  id: string;
  name: string;
  slug: string;
  billing_customer_id: string | null;
  created: Date;
}

export function toWorkspace(row: WorkspaceRow): WorkspaceEntity {
  return Object.assign(new WorkspaceEntity(), {
    id: row.id,
    name: row.name,
    slug: row.slug,
    billingCustomerId: row.billing_customer_id,
    created: row.created,
  });
}
