import { MigrationInterface, QueryRunner } from 'typeorm';

export class InitialSchema1795252276538 implements MigrationInterface {
  name = 'InitialSchema1795252276538';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            CREATE TYPE "public"."developer_kind" AS ENUM('HUMAN', 'API')
        `);
    await queryRunner.query(`
            CREATE TABLE "developers" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "email" character varying(320) NOT NULL,
                "kind" "public"."developer_kind" NOT NULL,
                "password_hash" text,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "deleted" TIMESTAMP WITH TIME ZONE,
                CONSTRAINT "UQ_c3b619f396a081afc995c856bdc" UNIQUE ("email"),
                CONSTRAINT "PK_247719240b950bd26dec14bdd21" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "oauth_authorization_codes" (
                "code_hash" character varying(64) NOT NULL,
                "client_id" character varying(200) NOT NULL,
                "developer_id" uuid NOT NULL,
                "redirect_uri" text NOT NULL,
                "code_challenge" character varying(128),
                "scope" text NOT NULL DEFAULT '',
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "consumed_at" TIMESTAMP WITH TIME ZONE,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_25c7c7a7cdc5a6eb88200c472ca" PRIMARY KEY ("code_hash")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "oauth_clients" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "client_id" character varying(200) NOT NULL,
                "name" character varying(200) NOT NULL,
                "secret_hash" text,
                "redirect_uris" text array NOT NULL DEFAULT '{}',
                "is_public" boolean NOT NULL DEFAULT false,
                "developer_id" uuid,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_c5c4af500cc8bfc05500fff7f90" UNIQUE ("client_id"),
                CONSTRAINT "PK_c4759172d3431bae6f04e678e0d" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_10e77d5aec7d5aab8b203a7277" ON "oauth_clients" ("developer_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "oauth_refresh_tokens" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "token_hash" character varying(64) NOT NULL,
                "family_id" uuid NOT NULL,
                "client_id" character varying(200) NOT NULL,
                "developer_id" uuid NOT NULL,
                "scope" text NOT NULL DEFAULT '',
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "used_at" TIMESTAMP WITH TIME ZONE,
                "revoked_at" TIMESTAMP WITH TIME ZONE,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_e670f36d6278d3f45fce07dbc23" UNIQUE ("token_hash"),
                CONSTRAINT "PK_6051e97f5024636e53749cfdc80" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_f88e2e36d2bd85e52a09452396" ON "oauth_refresh_tokens" ("family_id")
        `);
    await queryRunner.query(`
            CREATE TABLE "workspaces" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "name" character varying(200) NOT NULL,
                "slug" character varying(200) NOT NULL,
                "billing_customer_id" character varying(200),
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_b8e9fe62e93d60089dfc4f175f3" UNIQUE ("slug"),
                CONSTRAINT "PK_098656ae401f3e1a4586f47fd8e" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."database_status" AS ENUM(
                'PENDING',
                'REQUESTED',
                'BUILT',
                'POOLED',
                'READY'
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "databases" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "name" character varying(63) NOT NULL,
                "region" character varying(40) NOT NULL,
                "sharded" boolean NOT NULL DEFAULT false,
                "status" "public"."database_status" NOT NULL DEFAULT 'REQUESTED',
                "physical_name" character varying(63) NOT NULL,
                "last_error" text,
                "provision_attempts" integer NOT NULL DEFAULT '0',
                "deleted" TIMESTAMP WITH TIME ZONE,
                "deletion_due_at" TIMESTAMP WITH TIME ZONE,
                "finalized" TIMESTAMP WITH TIME ZONE,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_9c1c48b01465936128cba3eab4d" UNIQUE ("physical_name"),
                CONSTRAINT "PK_238a190c9ace4bea3dc1896f988" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_4c472f9441971ff5b6a5e4563e" ON "databases" ("deletion_due_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_8190a2258c9b49c7edf3813862" ON "databases" ("workspace_id", "created")
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_96d94ec52cda8731e2e02c110e" ON "databases" ("workspace_id", "name")
            WHERE "deleted" IS NULL
        `);
    await queryRunner.query(`
            CREATE TABLE "credential_rotations" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "database_id" uuid NOT NULL,
                "new_credential_id" uuid NOT NULL,
                "reason" text NOT NULL DEFAULT '',
                "delay_hours" integer NOT NULL,
                "old_expire_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "requested_by" uuid,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_61b690bb5c62ec405ccd0487651" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "credentials" (
                "id" uuid NOT NULL,
                "database_id" uuid NOT NULL,
                "password_ciphertext" text NOT NULL,
                "internal" boolean NOT NULL DEFAULT false,
                "tenant" character varying(200),
                "created_by" uuid,
                "expires_at" TIMESTAMP WITH TIME ZONE,
                "expired_by_rotation_id" uuid,
                "dropped" TIMESTAMP WITH TIME ZONE,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_1e38bc43be6697cdda548ad27a6" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_dd25c82e6775c190f16c3272bc" ON "credentials" ("expires_at")
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_cda8c2f374475489705d63f99a" ON "credentials" ("database_id", "created")
        `);
    await queryRunner.query(`
            CREATE TABLE "pooled_databases" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "region" character varying(40) NOT NULL,
                "physical_name" character varying(63) NOT NULL,
                "ready" boolean NOT NULL DEFAULT false,
                "last_error" text,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_f910bc745d5dadf8740b1bc95d4" UNIQUE ("physical_name"),
                CONSTRAINT "PK_59bf499a266ab99a68e0dd93ccc" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_cccb0e6b551651697a3316429b" ON "pooled_databases" ("region", "ready")
        `);
    await queryRunner.query(`
            CREATE TYPE "public"."invite_state" AS ENUM(
                'EMAIL_PENDING',
                'EMAIL_SENT',
                'VERIFIED',
                'EXPIRED'
            )
        `);
    await queryRunner.query(`
            CREATE TABLE "invites" (
                "id" uuid NOT NULL DEFAULT gen_random_uuid(),
                "workspace_id" uuid NOT NULL,
                "sender_id" uuid NOT NULL,
                "email" character varying(320) NOT NULL,
                "code_hash" character varying(64) NOT NULL,
                "code_ciphertext" text,
                "state" "public"."invite_state" NOT NULL DEFAULT 'EMAIL_PENDING',
                "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
                "email_sent_at" TIMESTAMP WITH TIME ZONE,
                "email_attempts" integer NOT NULL DEFAULT '0',
                "last_error" text,
                "accepted_by" uuid,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                "updated" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "UQ_b2d755b74c2711d049158dbd81d" UNIQUE ("code_hash"),
                CONSTRAINT "PK_aa52e96b44a714372f4dd31a0af" PRIMARY KEY ("id")
            )
        `);
    await queryRunner.query(`
            CREATE UNIQUE INDEX "IDX_2bc0f7c6063d54a9484d764138" ON "invites" ("workspace_id", "email")
            WHERE "state" IN ('EMAIL_PENDING', 'EMAIL_SENT')
        `);
    await queryRunner.query(`
            CREATE TABLE "workspace_members" (
                "workspace_id" uuid NOT NULL,
                "developer_id" uuid NOT NULL,
                "created" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
                CONSTRAINT "PK_8155ceaa373ead07f243f3b676d" PRIMARY KEY ("workspace_id", "developer_id")
            )
        `);
    await queryRunner.query(`
            CREATE INDEX "IDX_10e0c516339771fcd3bbd311af" ON "workspace_members" ("developer_id")
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_authorization_codes"
            ADD CONSTRAINT "FK_11da8b60260fb226dad6e042ddf" FOREIGN KEY ("developer_id") REFERENCES "developers"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_clients"
            ADD CONSTRAINT "FK_10e77d5aec7d5aab8b203a72779" FOREIGN KEY ("developer_id") REFERENCES "developers"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_refresh_tokens"
            ADD CONSTRAINT "FK_a81994e114994ced8d86d037982" FOREIGN KEY ("developer_id") REFERENCES "developers"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "databases"
            ADD CONSTRAINT "FK_612dd55144c4b1979aaaa47f12e" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "credential_rotations"
            ADD CONSTRAINT "FK_2eab256f9603b723affe6ee898f" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "credentials"
            ADD CONSTRAINT "FK_c18a3eb7815b9b61dddecdea44c" FOREIGN KEY ("database_id") REFERENCES "databases"("id") ON DELETE RESTRICT ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "credentials"
            ADD CONSTRAINT "FK_79e45f78414442ed7fda573c4ee" FOREIGN KEY ("expired_by_rotation_id") REFERENCES "credential_rotations"("id") ON DELETE
            SET NULL ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "invites"
            ADD CONSTRAINT "FK_568872c5b015a0e9d763837d530" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "invites"
            ADD CONSTRAINT "FK_6b781c34d21bc5296f283959dd2" FOREIGN KEY ("sender_id") REFERENCES "developers"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "workspace_members"
            ADD CONSTRAINT "FK_4a7c584ddfe855379598b5e20fd" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
    await queryRunner.query(`
            ALTER TABLE "workspace_members"
            ADD CONSTRAINT "FK_10e0c516339771fcd3bbd311afd" FOREIGN KEY ("developer_id") REFERENCES "developers"("id") ON DELETE CASCADE ON UPDATE NO ACTION
        `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
            ALTER TABLE "workspace_members" DROP CONSTRAINT "FK_10e0c516339771fcd3bbd311afd"
        `);
    await queryRunner.query(`
            ALTER TABLE "workspace_members" DROP CONSTRAINT "FK_4a7c584ddfe855379598b5e20fd"
        `);
    await queryRunner.query(`
            ALTER TABLE "invites" DROP CONSTRAINT "FK_6b781c34d21bc5296f283959dd2"
        `);
    await queryRunner.query(`
            ALTER TABLE "invites" DROP CONSTRAINT "FK_568872c5b015a0e9d763837d530"
        `);
    await queryRunner.query(`
            ALTER TABLE "credentials" DROP CONSTRAINT "FK_79e45f78414442ed7fda573c4ee"
        `);
    await queryRunner.query(`
            ALTER TABLE "credentials" DROP CONSTRAINT "FK_c18a3eb7815b9b61dddecdea44c"
        `);
    await queryRunner.query(`
            ALTER TABLE "credential_rotations" DROP CONSTRAINT "FK_2eab256f9603b723affe6ee898f"
        `);
    await queryRunner.query(`
            ALTER TABLE "databases" DROP CONSTRAINT "FK_612dd55144c4b1979aaaa47f12e"
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_refresh_tokens" DROP CONSTRAINT "FK_a81994e114994ced8d86d037982"
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_clients" DROP CONSTRAINT "FK_10e77d5aec7d5aab8b203a72779"
        `);
    await queryRunner.query(`
            ALTER TABLE "oauth_authorization_codes" DROP CONSTRAINT "FK_11da8b60260fb226dad6e042ddf"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_10e0c516339771fcd3bbd311af"
        `);
    await queryRunner.query(`
            DROP TABLE "workspace_members"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_2bc0f7c6063d54a9484d764138"
        `);
    await queryRunner.query(`
            DROP TABLE "invites"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."invite_state"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_cccb0e6b551651697a3316429b"
        `);
    await queryRunner.query(`
            DROP TABLE "pooled_databases"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_cda8c2f374475489705d63f99a"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_dd25c82e6775c190f16c3272bc"
        `);
    await queryRunner.query(`
            DROP TABLE "credentials"
        `);
    await queryRunner.query(`
            DROP TABLE "credential_rotations"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_96d94ec52cda8731e2e02c110e"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_8190a2258c9b49c7edf3813862"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_4c472f9441971ff5b6a5e4563e"
        `);
    await queryRunner.query(`
            DROP TABLE "databases"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."database_status"
        `);
    await queryRunner.query(`
            DROP TABLE "workspaces"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_f88e2e36d2bd85e52a09452396"
        `);
    await queryRunner.query(`
            DROP TABLE "oauth_refresh_tokens"
        `);
    await queryRunner.query(`
            DROP INDEX "public"."IDX_10e77d5aec7d5aab8b203a7277"
        `);
    await queryRunner.query(`
            DROP TABLE "oauth_clients"
        `);
    await queryRunner.query(`
            DROP TABLE "oauth_authorization_codes"
        `);
    await queryRunner.query(`
            DROP TABLE "developers"
        `);
    await queryRunner.query(`
            DROP TYPE "public"."developer_kind"
        `);
  }
}
