import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

export enum DeveloperKind {
  Human = 'HUMAN',
  Api = 'API',
}

@Entity('developers')
export class DeveloperEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /** Stored lower-cased, so the unique constraint is case-insensitive. */
  @Column({ type: 'varchar', length: 320, unique: true })
  email!: string;

  @Column({ type: 'enum', enum: DeveloperKind, enumName: 'developer_kind' })
  kind!: DeveloperKind;

  /** scrypt hash (`scrypt$N$r$p$salt$hash`); null for API developers. */
  @Column({ name: 'password_hash', type: 'text', nullable: true, select: false })
  passwordHash!: string | null;

  @CreateDateColumn({ type: 'timestamptz' })
  created!: Date;

  @Column({ type: 'timestamptz', nullable: true })
  deleted!: Date | null;
}
