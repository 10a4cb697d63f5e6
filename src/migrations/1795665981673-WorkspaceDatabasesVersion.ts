import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `workspaces.databases_version`: one more each time a committed transaction changed the workspace's
 * set of live databases (created, deleted, moved in or out, or the row removed), whatever code or
 * operator made the change. `/developers/me` remembers a big workspace's ids with the version they
 * were read at and reads them again only when it has moved (see DatabaseIdsCache).
 *
 * The triggers are deferred to the commit: the workspace row is then the last lock the transaction
 * takes, after everything its own work locked, so two transactions cannot wait on each other through
 * it; the change and its version become visible together. Existing workspaces start at 0: a process
 * remembers nothing across a restart, so any starting value is right.
 */
export class WorkspaceDatabasesVersion1795665981673 implements MigrationInterface {
  name = 'WorkspaceDatabasesVersion1795665981673';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workspaces" ADD "databases_version" bigint NOT NULL DEFAULT '0'`);
    await queryRunner.query(`
            CREATE FUNCTION "workspace_live_databases_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF TG_OP <> 'INSERT' AND OLD.workspace_id IS NOT NULL THEN
                UPDATE workspaces SET databases_version = databases_version + 1 WHERE id = OLD.workspace_id;
              END IF;
              IF TG_OP <> 'DELETE' AND NEW.workspace_id IS NOT NULL
                 AND (TG_OP = 'INSERT' OR NEW.workspace_id IS DISTINCT FROM OLD.workspace_id) THEN
                UPDATE workspaces SET databases_version = databases_version + 1 WHERE id = NEW.workspace_id;
              END IF;
              RETURN NULL;
            END
            $$
        `);
    await queryRunner.query(`
            CREATE CONSTRAINT TRIGGER "databases_added_or_removed" AFTER INSERT OR DELETE ON "databases"
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "workspace_live_databases_changed"()
        `);
    await queryRunner.query(`
            CREATE CONSTRAINT TRIGGER "databases_deleted_or_moved" AFTER UPDATE OF "deleted", "workspace_id" ON "databases"
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
            WHEN (OLD.deleted IS DISTINCT FROM NEW.deleted OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id)
            EXECUTE FUNCTION "workspace_live_databases_changed"()
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "databases_deleted_or_moved" ON "databases"`);
    await queryRunner.query(`DROP TRIGGER "databases_added_or_removed" ON "databases"`);
    await queryRunner.query(`DROP FUNCTION "workspace_live_databases_changed"()`);
    await queryRunner.query(`ALTER TABLE "workspaces" DROP COLUMN "databases_version"`);
  }
}
