import { randomBytes } from 'node:crypto';
import type { AppConfig } from '../../config/app-config';
import { SecretBox } from './secret-box';

const key = (id: string) => ({ id, key: randomBytes(32) });
const boxWith = (...keys: { id: string; key: Buffer }[]) =>
  new SecretBox({ secrets: { credentialKeys: keys } } as unknown as AppConfig);

describe('SecretBox', () => {
  const k1 = key('k1');
  const k2 = key('k2');

  it('opens what it sealed, and seals the same text differently each time', () => {
    const box = boxWith(k1);
    const a = box.seal('pässword');
    const b = box.seal('pässword');
    expect(a).not.toBe(b);
    expect(a.startsWith('k1:')).toBe(true);
    expect(a).not.toContain('pässword');
    expect(box.open(a)).toBe('pässword');
  });

  it('after a rotation seals with the new first key and still opens and verifies under the old one', () => {
    const before = boxWith(k1);
    const sealed = before.seal('secret');
    const mac = before.mac('invite', 'code');
    const after = boxWith(k2, k1);
    expect(after.open(sealed)).toBe('secret');
    expect(after.seal('secret').startsWith('k2:')).toBe(true);
    expect(after.verifyMac('invite', 'code', mac)).toBe(true);
    expect(after.verifyMac('invite', 'other', mac)).toBe(false);
    expect(after.verifyMac('other-purpose', 'code', mac)).toBe(false);
  });

  it('refuses a sealed value whose key is no longer configured, or that was altered', () => {
    const sealed = boxWith(k1).seal('secret');
    expect(() => boxWith(k2).open(sealed)).toThrow('No encryption key with id k1 is configured');
    const [id, iv, tag, data] = sealed.split(':');
    const flipped = Buffer.from(data, 'base64');
    flipped[0] ^= 1;
    expect(() => boxWith(k1).open([id, iv, tag, flipped.toString('base64')].join(':'))).toThrow();
    expect(() => boxWith({ id: 'k1', key: randomBytes(32) }).open(sealed)).toThrow();
  });
});
