import { ApiSchema } from '@nestjs/swagger';
import type { WorkspaceEntity } from './workspace.entity';

/** `Workspace` of the published API. */
@ApiSchema({ name: 'Workspace' })
export class WorkspaceResponse {
  id!: string;
  /** @example "Acme Prod" */
  name!: string;
  /** @example "acme-prod" */
  slug!: string;
  /** Identifier of the workspace at the payment provider, once it has one. */
  billing_customer_id?: string;
  created!: Date;

  static from(w: Pick<WorkspaceEntity, 'id' | 'name' | 'slug' | 'billingCustomerId' | 'created'>): WorkspaceResponse {
    return {
      id: w.id,
      name: w.name,
      slug: w.slug,
      billing_customer_id: w.billingCustomerId ?? undefined,
      created: w.created,
    };
  }
}
