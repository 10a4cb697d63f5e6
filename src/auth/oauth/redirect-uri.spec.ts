import { redirectUriMatches, redirectUriProblem } from './redirect-uri';

describe('redirect URI matching', () => {
  it('matches registered URIs exactly', () => {
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example/cb')).toBe(true);
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example/cb/')).toBe(false);
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example:8443/cb')).toBe(false);
    expect(redirectUriMatches('https://app.example/cb', 'https://app.example/cb?x=1')).toBe(false);
    expect(redirectUriMatches('https://app.example/cb', 'http://app.example/cb')).toBe(false);
    expect(redirectUriMatches('https://app.example/cb', 'https://evil.example/cb')).toBe(false);
  });

  it('lets loopback redirects use any port (RFC 8252 §7.3)', () => {
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost:8080/callback')).toBe(true);
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost:53682/callback')).toBe(true);
    expect(redirectUriMatches('http://127.0.0.1/cb', 'http://127.0.0.1:1234/cb')).toBe(true);
    expect(redirectUriMatches('http://[::1]/cb', 'http://[::1]:1234/cb')).toBe(true);
    expect(redirectUriMatches('http://localhost:9000/callback', 'http://localhost:8080/callback')).toBe(true);
  });

  it('keeps host, path and query of loopback redirects', () => {
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost:8080/other')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'http://127.0.0.1:8080/callback')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost:8080/callback?x=1')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'https://localhost:8080/callback')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost.evil.example:8080/callback')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'http://evil@localhost:8080/callback')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost:8080/callback#x')).toBe(false);
    expect(redirectUriMatches('http://localhost/callback', 'http://localhost:8080/x/../callback')).toBe(true);
    expect(redirectUriMatches('http://localhost/callback', 'not a url')).toBe(false);
  });

  it('registers https URIs, and plain http only on loopback', () => {
    expect(redirectUriProblem('https://app.example/cb')).toBeNull();
    expect(redirectUriProblem('http://localhost/callback')).toBeNull();
    expect(redirectUriProblem('http://127.0.0.1:8080/cb')).toBeNull();
    expect(redirectUriProblem('http://app.example/cb')).toMatch(/https/);
    expect(redirectUriProblem('https://app.example/cb#frag')).toMatch(/fragment/);
    expect(redirectUriProblem('javascript:alert(1)')).toMatch(/absolute http/);
    expect(redirectUriProblem('/relative')).toMatch(/absolute http/);
  });
});
