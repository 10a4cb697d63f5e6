import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Browser, chromium } from 'playwright-core';
import { TestApp } from '../support/test-app';
import { authorizationRequest, createHuman, Human, listeningApp, redeemCode } from './identity-support';

/** Debian's chromium package, driven headless (no browser download: see .ci/run). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('the login page in headless Chromium', () => {
  let t: TestApp & { baseUrl: string };
  let human: Human;
  let browser: Browser;
  let callback: Server;
  let callbackPort: number;
  const callbacks: URL[] = [];

  beforeAll(async () => {
    t = await listeningApp();
    human = await createHuman(t.app, 'browser');
    // Stands in for the CLI's loopback listener; listens on every loopback address `localhost` may resolve to.
    callback = createServer((req, res) => {
      callbacks.push(new URL(req.url!, `http://${req.headers.host}`));
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>Done</title><p>Logged in.</p>');
    });
    await new Promise<void>((resolve) => callback.listen(0, resolve));
    callbackPort = (callback.address() as AddressInfo).port;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => callback?.close(resolve));
    await t?.close();
  });

  async function openLoginPage() {
    const { params, verifier } = authorizationRequest('nilecli', `http://localhost:${callbackPort}/callback`);
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(message.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    const url = new URL('/authorize', t.baseUrl);
    url.search = new URLSearchParams(params as unknown as Record<string, string>).toString();
    const response = await page.goto(url.toString());
    expect(response?.status()).toBe(200);
    return { page, context, params, verifier, problems };
  }

  it('renders an accessible form and logs in, landing on the client’s loopback callback with a code', async () => {
    const { page, context, params, verifier, problems } = await openLoginPage();
    await expect(page.title()).resolves.toBe('Sign in');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in');
    // Reachable by their labels and roles, as assistive technology finds them.
    const email = page.getByLabel('E-mail');
    const password = page.getByLabel('Password');
    const submit = page.getByRole('button', { name: 'Sign in' });
    expect(await email.getAttribute('name')).toBe('email');
    expect(await password.getAttribute('name')).toBe('password');
    expect(await page.locator('button').count()).toBe(1);
    expect(await page.locator('script').count()).toBe(0);

    await email.fill(human.email);
    await password.fill(human.password);
    await Promise.all([page.waitForURL(`http://localhost:${callbackPort}/callback?**`), submit.click()]);

    const landed = new URL(page.url());
    expect(landed.searchParams.get('state')).toBe(params.state);
    const code = landed.searchParams.get('code')!;
    expect(callbacks.some((u) => u.searchParams.get('code') === code)).toBe(true);
    expect(await page.textContent('p')).toBe('Logged in.');
    // No Content-Security-Policy violation, no script error on the way.
    expect(problems).toEqual([]);

    const tokens = await redeemCode(t.http, params, code, verifier).expect(200);
    expect(tokens.body.access_token).toEqual(expect.any(String));
    await context.close();
  });

  it('shows the error on the same page after wrong credentials, without leaving it', async () => {
    const { page, context, problems } = await openLoginPage();
    await page.getByLabel('E-mail').fill(human.email);
    await page.getByLabel('Password').fill('not-the-password');
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    expect(response.status()).toBe(401);
    await page.waitForLoadState();
    expect(new URL(page.url()).origin).toBe(t.baseUrl);
    expect(await page.getByRole('alert').textContent()).toMatch(/not right/);
    expect(await page.getByLabel('E-mail').inputValue()).toBe(human.email);
    expect(await page.getByLabel('Password').inputValue()).toBe('');
    expect(problems.filter((p) => !/status of 401/.test(p))).toEqual([]);
    await context.close();
  });
});
