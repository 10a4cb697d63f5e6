import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, chromium } from 'playwright-core';
import { listeningApp } from '../identity/identity-support';
import { createDeveloperWithToken, TestApp } from '../support/test-app';

/** Debian's chromium package, driven headless (no browser download: see .ci/run). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Screenshots land here (git-ignored), for a human to look at after a run. */
const ARTIFACTS = join(__dirname, '..', '..', 'test-artifacts');

describe('Swagger UI (/docs) in headless Chromium', () => {
  let t: TestApp & { baseUrl: string };
  let browser: Browser;
  beforeAll(async () => {
    t = await listeningApp();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('authorizes with a bearer token, executes GET /developers/me and shows the 200 answer', async () => {
    const { developer, token } = await createDeveloperWithToken(t.app);
    const context = await browser.newContext({ viewport: { width: 1280, height: 1600 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    try {
      const response = await page.goto(new URL('/docs', t.baseUrl).toString());
      expect(response?.status()).toBe(200);
      await page.locator('.swagger-ui .info .title').waitFor();

      // Authorize: the bearer scheme's dialog.
      await page.locator('.auth-wrapper button.authorize').click();
      const dialog = page.locator('.dialog-ux .modal-ux');
      await dialog.locator('input[type="text"], input[type="password"]').first().fill(token);
      await dialog.locator('button.authorize').click();
      await dialog.locator('button.btn-done').click();

      // GET /developers/me: open it, "Try it out", "Execute".
      const operation = page.locator('.opblock.opblock-get', {
        has: page.locator('.opblock-summary-path[data-path="/developers/me"]'),
      });
      await operation.locator('.opblock-summary').first().click();
      await operation.locator('button.try-out__btn').click();
      const answered = page.waitForResponse(
        (res) => new URL(res.url()).pathname === '/developers/me' && res.request().method() === 'GET',
      );
      await operation.locator('button.execute').click();
      const answer = await answered;
      expect(answer.status()).toBe(200);
      expect(await answer.request().headerValue('authorization')).toBe(`Bearer ${token}`);

      // What the page shows: the live response's status and body.
      const live = operation.locator('.live-responses-table tbody tr.response');
      await expect(live.locator('.response-col_status').first().textContent()).resolves.toContain('200');
      await expect(live.locator('.response-col_description').first().textContent()).resolves.toContain(developer.id);

      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'swagger-ui.png'), fullPage: true });
      await operation.screenshot({ path: join(ARTIFACTS, 'swagger-ui-developers-me.png') });
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
