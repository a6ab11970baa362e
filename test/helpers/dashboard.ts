// `toolgate serve` with the given servers and Debian's Chromium signed in to its dashboard with the
// admin token, for the dashboard e2e tests. TOOLGATE_HOME points into the test's own folder until close.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { pino } from 'pino';
import { AuditLog } from '../../src/audit/index.js';
import { GatewayConfigSchema } from '../../src/config/gateway.js';
import { Gateway } from '../../src/gateway/server.js';
import { openSqliteState } from '../../src/state/sqlite.js';
import { tempDir } from './toolgate.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface SignedInDashboard {
  dir: string;
  base: string;
  page: Page;
  close(): Promise<void>;
}

/** `servers` may name files in `dir` (made before the gateway starts, e.g. by `prepare`). */
export async function openDashboard(opts: { prefix: string; admin: string; servers: (dir: string) => Record<string, unknown> }): Promise<SignedInDashboard> {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing`);
  const homeBefore = process.env.TOOLGATE_HOME;
  const dir = tempDir(opts.prefix);
  process.env.TOOLGATE_HOME = join(dir, 'home');
  const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin: { token: opts.admin }, servers: opts.servers(dir) });
  const state = openSqliteState(join(dir, 'state.db'));
  const audit = new AuditLog(join(dir, 'audit.db'));
  const gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
  const base = `http://127.0.0.1:${(await gateway.start()).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  await page.goto(`${base}/ui/`);
  await page.getByLabel('Admin token').fill(opts.admin);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Servers' }).waitFor();
  return {
    dir, base, page,
    async close() {
      await browser.close();
      await gateway.stop();
      audit.close();
      await state.close();
      if (homeBefore === undefined) delete process.env.TOOLGATE_HOME; else process.env.TOOLGATE_HOME = homeBefore;
    },
  };
}
