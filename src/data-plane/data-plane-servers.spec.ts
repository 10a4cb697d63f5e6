import type { AppConfig } from '../config/app-config';
import type { SecretBox } from '../common/crypto/secret-box';
import type { MetadataTransactions } from '../database/metadata-transactions';
import type { Reconciler } from '../queues/reconciler';
import { DataPlaneServerState, type DataPlaneServerEntity } from './data-plane-server.entity';
import { DataPlaneServers } from './data-plane-servers.service';
import type { DataPlaneServersRepository } from './data-plane-servers.repository';

const server = {
  id: 's1',
  region: 'AWS_US_WEST_2',
  publicHost: 'db.example:5432',
  maxDatabases: 100,
  state: DataPlaneServerState.Active,
  adminUrlCiphertext: 'sealed',
  created: new Date('2026-11-01T00:00:00Z'),
  updated: new Date('2026-11-01T00:00:00Z'),
} as DataPlaneServerEntity;

/** The service over a repository whose reads answer, or fail, as `reads` says, one after the other. */
function serversReading(reads: ('answer' | 'fail')[]): { directory: DataPlaneServers; reads: () => number } {
  let n = 0;
  const repository = {
    all: () => {
      const outcome = reads[n++];
      return outcome === 'answer' ? Promise.resolve([server]) : Promise.reject(new Error('metadata database away'));
    },
  } as unknown as DataPlaneServersRepository;
  const directory = new DataPlaneServers(
    repository,
    {} as MetadataTransactions,
    {} as AppConfig,
    {} as SecretBox,
    {} as Reconciler,
  );
  return { directory, reads: () => n };
}

describe('the fleet as a process knows it (DataPlaneServers.directory)', () => {
  afterEach(() => jest.useRealTimers());

  it('answers its last copy when a read for a copy a few seconds old fails, and reads again at the next call', async () => {
    jest.useFakeTimers({ now: new Date('2026-11-27T12:00:00Z') });
    const { directory, reads } = serversReading(['answer', 'fail', 'answer']);
    expect((await directory.directory()).map((s) => s.id)).toEqual(['s1']);
    jest.setSystemTime(new Date('2026-11-27T12:00:05Z'));
    // What a create's answer reads right after its commit (public host, expandable): not a 503 for a
    // database already made because the metadata database failed a moment later.
    expect((await directory.directory()).map((s) => s.id)).toEqual(['s1']);
    expect(await directory.publicHost('s1')).toBe('db.example:5432');
    expect(reads()).toBe(3);
  });

  it('keeps what the read begun last found: one begun earlier and ending later does not replace it', async () => {
    jest.useFakeTimers({ now: new Date('2026-11-27T12:00:00Z') });
    const added: DataPlaneServerEntity = { ...server, id: 's2' };
    let finishSlowRead: (rows: DataPlaneServerEntity[]) => void = () => undefined;
    const answers: (() => Promise<DataPlaneServerEntity[]>)[] = [
      () => new Promise((resolve) => (finishSlowRead = resolve)), // begun before s2 was added
      () => Promise.resolve([server, added]), // a fresh read after it
      () => Promise.reject(new Error('metadata database away')),
    ];
    let n = 0;
    const directory = new DataPlaneServers(
      { all: () => answers[n++]() } as unknown as DataPlaneServersRepository,
      {} as MetadataTransactions,
      {} as AppConfig,
      {} as SecretBox,
      {} as Reconciler,
    );
    const slow = directory.directory();
    expect((await directory.directory(true)).map((s) => s.id)).toEqual(['s1', 's2']);
    finishSlowRead([server]);
    await slow;
    // The copy a failed read falls back on is the newer one.
    jest.setSystemTime(new Date('2026-11-27T12:00:05Z'));
    expect((await directory.directory()).map((s) => s.id)).toEqual(['s1', 's2']);
  });

  it('still fails a read asked to be fresh, and a first read, when the metadata database fails', async () => {
    const { directory } = serversReading(['fail', 'answer', 'fail']);
    await expect(directory.directory()).rejects.toThrow('metadata database away');
    await directory.directory(true);
    await expect(directory.directory(true)).rejects.toThrow('metadata database away');
  });
});
