import { InvalidEnvironmentError, validateEnvironment } from './environment';
import { parseTrustProxy } from './trust-proxy';

describe('TRUST_PROXY', () => {
  it('takes what Express takes: true, false, a number of hops, or a list of proxies', () => {
    expect(parseTrustProxy('loopback')).toEqual(['loopback']);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('true')).toBe(true);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('loopback, 10.0.0.0/8, fd00::/8,192.0.2.7')).toEqual([
      'loopback',
      '10.0.0.0/8',
      'fd00::/8',
      '192.0.2.7',
    ]);
  });

  it('refuses anything else', () => {
    for (const bad of [
      '',
      'yes',
      'loopbak',
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0/8',
      'proxy.example',
      '1.2.3.4/8/9',
      '-1',
    ]) {
      expect(parseTrustProxy(bad)).toBeNull();
    }
  });

  it('is checked at boot: loopback by default, anything Express would not take refused', () => {
    expect(validateEnvironment({}).TRUST_PROXY).toBe('loopback');
    expect(validateEnvironment({ TRUST_PROXY: '10.0.0.0/8' }).TRUST_PROXY).toBe('10.0.0.0/8');
    expect(() => validateEnvironment({ TRUST_PROXY: 'yes' })).toThrow(InvalidEnvironmentError);
    expect(() => validateEnvironment({ TRUST_PROXY: 'yes' })).toThrow(/TRUST_PROXY: must be true, false/);
  });
});
