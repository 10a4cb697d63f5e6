import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { Region } from '../config/regions';

export enum DataPlaneServerState {
  /** Takes new databases. */
  Active = 'ACTIVE',
  /** Takes no new databases; the ones on it keep working. */
  Draining = 'DRAINING',
  /** Takes no new databases and is left out of readiness checks; the ones on it are not moved. */
  Disabled = 'DISABLED',
}

/**
 * One PostgreSQL server of a region's data plane. Databases and warm-pool entries record the
 * server they live on; every data-plane operation on them goes there. The admin URL carries a
 * password, so it is stored only sealed (SecretBox) and never logged or returned.
 */
@Entity('data_plane_servers')
@Index(['region', 'state'])
@Index(['region', 'systemIdentifier'], { unique: true })
export class DataPlaneServerEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'varchar', length: 40 })
  region!: Region;

  /** SecretBox ciphertext of the admin connection URL. */
  @Column({ name: 'admin_url_ciphertext', type: 'text', select: false })
  adminUrlCiphertext!: string;

  /** `host:port` customers connect to. */
  @Column({ name: 'public_host', type: 'varchar', length: 255 })
  publicHost!: string;

  /** How many databases (customer and warm-pool) it may hold. */
  @Column({ name: 'max_databases', type: 'int' })
  maxDatabases!: number;

  /**
   * The PostgreSQL cluster's `system_identifier` (pg_control_system()), read at registration: one
   * cluster is one server of a region (it may serve several regions: by default every region's first
   * server comes from DATA_PLANE_URL). Null for a server registered before it was recorded, until a
   * `server:add` or `server:update --url` reads it.
   */
  @Column({ name: 'system_identifier', type: 'varchar', length: 20, nullable: true })
  systemIdentifier!: string | null;

  @Column({
    type: 'enum',
    enum: DataPlaneServerState,
    enumName: 'data_plane_server_state',
    default: DataPlaneServerState.Active,
  })
  state!: DataPlaneServerState;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz' })
  updated!: Date;
}
