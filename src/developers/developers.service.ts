import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, IsNull, Repository } from 'typeorm';
import { DeveloperEntity } from './developer.entity';

@Injectable()
export class DevelopersService {
  constructor(@InjectRepository(DeveloperEntity) private readonly developers: Repository<DeveloperEntity>) {}

  /** Hot path (every authenticated request): one indexed lookup of three columns. */
  findActive(id: string): Promise<Pick<DeveloperEntity, 'id' | 'email' | 'kind'> | null> {
    return this.developers.findOne({ select: { id: true, email: true, kind: true }, where: { id, deleted: IsNull() } });
  }

  /** Active developers by id (the order of the ids is kept). */
  async findActiveMany(ids: string[]): Promise<Pick<DeveloperEntity, 'id' | 'email' | 'kind'>[]> {
    if (!ids.length) return [];
    const rows = await this.developers.find({
      select: { id: true, email: true, kind: true },
      where: { id: In(ids), deleted: IsNull() },
    });
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((id) => byId.get(id) ?? []);
  }
}
