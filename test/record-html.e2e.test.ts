import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';
import { BIN, FILESYSTEM, tempDir, testEnv } from './helpers/toolgate.js';

const exec = promisify(execFile);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The record pages as a person sees them: Debian's Chromium, headless, driven by playwright-core. */
describe('record HTML in a real browser', () => {
  let browser: Browser;
  let dir: string;
  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
    dir = join(tempDir(), 'record');
    const home = tempDir();
    await exec(process.execPath, [BIN, 'record', '--format', 'html', '-o', dir, '--', process.execPath, FILESYSTEM, home], { env: testEnv(home) });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(() => browser?.close());

  it('the server page shows the grade, identity and every tool, each linked to its page', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${join(dir, 'index.html')}`);
    assert.equal(await page.title(), 'secure-filesystem-server: Risk & Policy');
    // F since issue 24: the server marks write_file, edit_file and move_file destructiveHint (they overwrite), so they need approval.
    assert.equal((await page.locator('.grade').innerText()).trim(), 'F');
    for (const heading of ['Identity', 'Tools by category', 'Every tool', 'Recommended policy']) {
      assert.ok(await page.getByRole('heading', { name: heading }).isVisible(), heading);
    }
    const links = await page.locator('table a').count();
    assert.equal(links, 14);
    const shot = join(dir, 'server.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 20_000, 'the page renders real content');
    await page.close();
  });

  it('fits a 400 px phone: nothing wider than the screen, the verdict column in view, long policy lines scroll in their box', async () => {
    const page = await browser.newPage({ viewport: { width: 400, height: 800 } });
    for (const file of ['index.html', 'tools/list_directory_with_sizes.html', 'tools/write_file.html']) {
      await page.goto(`file://${join(dir, file)}`);
      const { scrollWidth, outside } = await page.evaluate(() => {
        const width = document.documentElement.clientWidth;
        // A <pre> may be wider inside: it scrolls itself, not the page.
        const outside = [...document.querySelectorAll('body *')]
          .filter((e) => !e.closest('pre') && e.getBoundingClientRect().right > width + 0.5)
          .map((e) => `${e.tagName.toLowerCase()}: ${(e.textContent ?? '').slice(0, 40)}`);
        return { scrollWidth: document.documentElement.scrollWidth, outside };
      });
      assert.deepEqual(outside, [], `${file}: elements beyond 400 px`);
      assert.equal(scrollWidth, 400, `${file}: the page scrolls sideways`);
    }
    await page.goto(`file://${join(dir, 'index.html')}`);
    const verdict = await page.locator('th', { hasText: 'verdict' }).boundingBox();
    assert.ok(verdict && verdict.x + verdict.width <= 400, 'the verdict column is in view');
    // Kept beside the record in the temporary directory (not in the repository), to look at.
    const shot = join(dir, 'server-400px.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 20_000);
    await page.close();
  });

  it('a tool page has the seed record sections and the policy as code', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${join(dir, 'index.html')}`);
    await page.click('text=write_file');
    assert.match(page.url(), /tools\/write_file\.html$/);
    for (const heading of ['What it does', 'Why it needs a policy', 'Attacks that exploit this kind of access', 'Verdict', 'FAQ']) {
      assert.ok(await page.getByRole('heading', { name: heading }).isVisible(), heading);
    }
    assert.match(await page.locator('pre code').innerText(), /"write_file": \{\s*"description": "Destructive\/critical: needs approval",\s*"action": "approve"/);
    await page.click('summary >> text=Path traversal');
    assert.ok(await page.getByText('starts_with', { exact: false }).first().isVisible());
    await page.click('text=← secure-filesystem-server');
    assert.match(page.url(), /index\.html$/);
    await page.close();
  });
});
