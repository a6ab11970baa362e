import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { openDashboard, type SignedInDashboard } from './helpers/dashboard.js';
import { FIXTURES } from './helpers/toolgate.js';

const ADMIN = 'hidden-text-dashboard-admin-token-0123456789';
/** What bidi-server.mjs hides: a right-to-left override and a zero-width space. */
const HIDDEN = /[\u202e\u200b]/u;

/**
 * An upstream lies to the operator with invisible characters in its server name, title, version,
 * a tool's name and the words of a description the classifier quotes as evidence: on the
 * dashboard's server, tool, policy and records pages, every one shows as an escape.
 */
describe('dashboard: invisible and bidi characters from an upstream are shown as escapes', () => {
  let page: Page; let base: string; let dash: SignedInDashboard;

  before(async () => {
    dash = await openDashboard({ prefix: 'toolgate-hidden-dash-', admin: ADMIN, servers: () => ({ bidi: { command: process.execPath, args: [join(FIXTURES, 'bidi-server.mjs')] } }) });
    ({ page, base } = dash);
  });

  after(() => dash?.close());

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
