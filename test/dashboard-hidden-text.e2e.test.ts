import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { FIXTURES, tempDir } from './helpers/toolgate.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN = 'hidden-text-dashboard-admin-token-0123456789';
/** What bidi-server.mjs hides: a right-to-left override and a zero-width space. */
const HIDDEN = /[\u202e\u200b]/u;

/**
 * An upstream lies to the operator with invisible characters in its server name, title, version,
 * a tool's name and the words of a description the classifier quotes as evidence: on the
 * dashboard's server, tool, policy and records pages, every one shows as an escape.
 */
describe('dashboard: invisible and bidi characters from an upstream are shown as escapes', () => {
  let dir: string; let state: StateStore; let audit: AuditLog; let gateway: Gateway; let browser: Browser; let page: Page; let base: string;
  const homeBefore = process.env.TOOLGATE_HOME;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing`);
    dir = tempDir('toolgate-hidden-dash-');
    process.env.TOOLGATE_HOME = join(dir, 'home');
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', admin: { token: ADMIN },
      servers: { bidi: { command: process.execPath, args: [join(FIXTURES, 'bidi-server.mjs')] } },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(30_000);
    page = await context.newPage();
    await page.goto(`${base}/ui/`);
    await page.getByLabel('Admin token').fill(ADMIN);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Servers' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await gateway?.stop();
    audit?.close();
    await state?.close();
    if (homeBefore === undefined) delete process.env.TOOLGATE_HOME; else process.env.TOOLGATE_HOME = homeBefore;
  });

  const body = () => page.locator('body').innerText();

  it('the server record: name, title, version and tool names', async () => {
    await page.goto(`${base}/ui/#/servers/bidi`);
    await page.getByRole('heading', { level: 1, name: /Risk & Policy/ }).waitFor();
    const text = await body();
    assert.match(text, /Read\\u\{200B\}-only notes \\u\{202E\}eteled: Risk & Policy/);
    assert.match(text, /bidi-fixture\\u\{202E\}txt\.exe 1\.0\\u\{202E\}\.0/);
    assert.match(text, /read\\u\{200B\}_note\\u\{202E\}/);
    assert.doesNotMatch(text, HIDDEN);
  });

  it('a tool record: its heading and the evidence quoted from its description', async () => {
    await page.goto(`${base}/ui/#/servers/bidi/tools/delete_files`);
    await page.getByRole('heading', { level: 1, name: /^delete_files · / }).waitFor();
    const text = await body();
    assert.match(text, /Delete\\u\{200B\} files\\u\{202E\} permanently/);
    assert.doesNotMatch(text, HIDDEN);
    await page.goto(`${base}/ui/#/servers/bidi/tools/${encodeURIComponent('read\u200b_note\u202e')}`);
    await page.getByRole('heading', { level: 1, name: /^read\\u\{200B\}_note\\u\{202E\} · / }).waitFor();
    assert.doesNotMatch(await body(), HIDDEN);
  });

  it('the policy page and the records search', async () => {
    await page.goto(`${base}/ui/#/policy/bidi`);
    await page.locator('td', { hasText: 'delete_files' }).first().waitFor();
    assert.doesNotMatch(await body(), HIDDEN);
    await page.goto(`${base}/ui/#/records?q=note`);
    await page.locator('#catalog-search').fill('read');
    await page.locator('section.card h2').first().waitFor();
    assert.doesNotMatch(await body(), HIDDEN);
  });
});
