import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { BIN, denialText, EVERYTHING, FIXTURES, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);

/** The status of a request, its body read to the end (an unread body keeps its connection open). */
async function statusOf(url: string, init?: RequestInit): Promise<number> {
  const res = await fetch(url, init);
  await res.arrayBuffer();
  return res.status;
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN = 'dashboard-admin-token-0123456789abcdef';
const ENV_SECRET = 'upstream-env-credential-5f1e9a';
const HEADER_SECRET = 'secret-123';
const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 400, height: 860 };

/** The dashboard as an operator uses it: Debian's Chromium, headless, against a real gateway and real servers. */
describe('dashboard at /ui', () => {
  let dir: string;
  let shots: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let fixture: ChildProcess;
  let policyFile: string;
  let aliceToken: string;
  const secretsSeen: string[] = [];
  const homeBefore = process.env.TOOLGATE_HOME;
  const clients: Client[] = [];
  /** Every response body the browser received, except the two that show a new token once. */
  const bodies: { url: string; body: string }[] = [];
  const pageErrors: string[] = [];

  const basePolicy = {
    version: '1', default: 'deny', hide: ['get-env'],
    tools: { echo: {}, 'get-sum': { limits: [{ counter: 'sum', window: 'minute', max: 100, scope: 'grant' }] }, 'get-annotated-message': { action: 'approve' } },
  };

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
    dir = tempDir('toolgate-dashboard-');
    shots = process.env.DASHBOARD_SHOTS ?? join(dir, 'shots');
    mkdirSync(shots, { recursive: true });
    process.env.TOOLGATE_HOME = join(dir, 'home');
    policyFile = writePolicy(dir, basePolicy, 'everything.json');
    fixture = spawn(process.execPath, [join(FIXTURES, 'http-server.mjs'), '0'], { env: { ...process.env, REQUIRE_KEY: '1' }, stdio: ['ignore', 'pipe', 'inherit'] });
    const fixturePort = await new Promise<number>((resolve) => fixture.stdout!.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) resolve(Number(m[1])); }));
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      admin: { token: ADMIN },
      servers: {
        everything: { command: process.execPath, args: [EVERYTHING], env: { UPSTREAM_API_TOKEN: ENV_SECRET }, policy: policyFile },
        remote: { url: `http://127.0.0.1:${fixturePort}/mcp`, headers: { 'x-api-key': HEADER_SECRET } },
      },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    const { port } = await gateway.start();
    base = `http://127.0.0.1:${port}`;
    aliceToken = (await new Grants(state.grants).create({ server: 'everything', label: 'alice' })).token;
    secretsSeen.push(ADMIN, ENV_SECRET, HEADER_SECRET, aliceToken);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    context = await browser.newContext({ viewport: DESKTOP });
    context.setDefaultTimeout(20_000);
    page = await context.newPage();
    page.on('pageerror', (err) => { pageErrors.push(err.message); });
    page.on('response', async (res) => {
      if (!res.url().startsWith(base)) return;
      const once = res.request().method() === 'POST' && /\/api\/grants(\/[^/]+\/rotate)?$/.test(new URL(res.url()).pathname);
      if (once || res.headers()['content-type']?.startsWith('text/event-stream')) return;
      try { bodies.push({ url: res.url(), body: await res.text() }); } catch { /* a redirect has no body */ }
    });
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await browser?.close();
    await gateway?.stop();
    audit?.close();
    await state?.close();
    fixture?.kill();
    if (homeBefore === undefined) delete process.env.TOOLGATE_HOME; else process.env.TOOLGATE_HOME = homeBefore;
    if (!process.env.DASHBOARD_SHOTS) rmSync(dir, { recursive: true, force: true });
  });

  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'dashboard-test-agent', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/everything`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  /** Desktop and phone screenshots of what the page shows now, for a person to look at. */
  async function shoot(name: string): Promise<void> {
    await page.screenshot({ path: join(shots, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(shots, `${name}-phone.png`), fullPage: true });
    await page.setViewportSize(DESKTOP);
  }

  async function go(hash: string, heading: string | RegExp): Promise<void> {
    await page.goto(`${base}/ui/${hash}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  it('refuses the API without a session, and the sign-in page carries no secret', async () => {
    assert.equal(await statusOf(`${base}/api/servers`), 401);
    assert.equal(await statusOf(`${base}/ui/session`), 401);
    await page.goto(`${base}/ui`);
    await page.getByLabel('Admin token').waitFor({ timeout: 5000 }).catch(() => { throw new Error(`the sign-in form did not show: ${pageErrors.join('; ')}`); });
    assert.equal(new URL(page.url()).pathname, '/ui/');
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).isVisible(), false, 'no navigation before signing in');
    assert.equal(await page.getByRole('button', { name: 'Sign out' }).isVisible(), false);
    await shoot('signin');
  });

  it('signs in with the admin token into an HttpOnly, SameSite=Strict cookie; a wrong token is refused', async () => {
    await page.getByLabel('Admin token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('that is not the admin token').waitFor();
    await page.getByLabel('Admin token').fill(ADMIN);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Servers' }).waitFor();
    assert.ok(!page.url().includes(ADMIN), 'the token is not in the URL');
    const [cookie] = await context.cookies(base);
    assert.equal(cookie.name, 'toolgate_session');
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Strict');
    assert.ok(!cookie.value.includes(ADMIN));
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    assert.ok(!stored.includes(ADMIN), 'nothing of the token is kept in the page');
  });

  it('shows every server with its grade, categories, posture and pins, and opens its record and a tool record', async () => {
    const card = page.locator('section.card', { has: page.getByRole('heading', { name: 'everything' }) });
    await card.getByText('auth posture').waitFor({ timeout: 30_000 });
    await page.locator('section.card', { has: page.getByRole('heading', { name: 'remote' }) }).getByText('auth posture').waitFor({ timeout: 30_000 });
    assert.match(await card.innerText(), /Read \d+/);
    assert.match(await card.locator('.grade').innerText(), /^[A-F]$/);
    assert.match(await page.locator('section.card', { has: page.getByRole('heading', { name: 'remote' }) }).innerText(), /token, no TLS/);
    await shoot('servers');
    await card.getByRole('link', { name: 'Record' }).click();
    await page.getByRole('heading', { level: 1, name: /Risk & Policy/ }).waitFor({ timeout: 30_000 });
    for (const heading of ['Identity', 'Auth posture', 'Tools by category', 'Every tool', 'Recommended policy', 'Pins']) {
      assert.ok(await page.getByRole('heading', { name: heading, exact: true }).isVisible(), heading);
    }
    await shoot('server-record');
    await page.getByRole('link', { name: 'echo', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: /^echo · / }).waitFor();
    for (const heading of ['What it does', 'Why it needs a policy', 'Attacks that exploit this kind of access', 'Verdict', 'FAQ']) {
      assert.ok(await page.getByRole('heading', { name: heading }).isVisible(), heading);
    }
    await shoot('tool-record');
  });

  it('accepts the current tools as pins after review', async () => {
    await go('#/servers/everything', /Risk & Policy/);
    await page.getByRole('button', { name: 'Pin current tools' }).click();
    await page.getByRole('button', { name: 'Accept', exact: true }).click();
    await page.locator('.pin-pinned').first().waitFor();
    // Under what the server is (its package and declared name), not the gateway's name for it.
    assert.ok(await state.pins.get('@modelcontextprotocol/server-everything (mcp-servers/everything)'), 'pins were stored');
  });

  it('searches the catalog by tool name and opens the breakdown', async () => {
    await go('#/records', 'Records');
    await page.getByLabel('Search the catalog').fill('get-sum');
    const link = page.getByRole('link', { name: 'get-sum', exact: true });
    await link.waitFor();
    await shoot('records-search');
    await link.click();
    await page.getByRole('heading', { level: 1, name: /^get-sum · / }).waitFor();
    assert.ok(await page.getByRole('heading', { name: 'Verdict' }).isVisible());
  });

  it('shows a call made by an SDK client in the live view as it happens, with its rule', async () => {
    await go('#/live', 'Live traffic');
    await page.locator('#stream-state', { hasText: 'live' }).waitFor();
    await page.getByText(/audit verify: \d+ rows, chain intact/).waitFor();
    const client = await connect(aliceToken);
    const result = await client.callTool({ name: 'echo', arguments: { message: 'hello from the agent' } });
    assert.equal(denialText(result), undefined);
    const row = page.locator('#live-rows tr', { hasText: 'echo' }).first();
    await row.waitFor();
    assert.match(await row.innerText(), /echo[\s\S]*allow[\s\S]*alice[\s\S]*\/tools\/echo/);
    await client.callTool({ name: 'drop-everything', arguments: {} });
    const denied = page.locator('#live-rows tr', { hasText: 'drop-everything' }).first();
    await denied.waitFor();
    assert.match(await denied.innerText(), /deny[\s\S]*\(default\)/);
    await page.getByLabel('Decision').selectOption('deny');
    assert.equal(await page.locator('#live-rows tr', { hasText: 'hello' }).count(), 0);
    assert.ok(await page.locator('#live-rows tr', { hasText: 'drop-everything' }).count() >= 1);
    await page.getByLabel('Decision').selectOption('');
    await shoot('live');
  });

  it('issue 23: the server page shows the configured verdict beside the recommended one; the chart has a scale and times; titles have no focus ring; the editor wraps', async () => {
    await go('#/servers/everything', /Risk & Policy/);
    const getEnv = page.locator('tr', { has: page.getByRole('link', { name: 'get-env', exact: true }) });
    await getEnv.waitFor({ timeout: 30_000 });
    assert.deepEqual(await page.locator('table', { has: getEnv }).locator('th').allInnerTexts(), ['tool', 'category', 'risk', 'verdict', 'recommended']);
    // The configured policy hides get-env; toolgate would recommend approval for it.
    assert.deepEqual(await getEnv.locator('td').allInnerTexts().then((t) => [t[3].split('\n')[0], t[4]]), ['Hidden', 'Needs approval']);
    const outline = await page.locator('#view h1').evaluate((el) => [document.activeElement === el, getComputedStyle(el).outlineStyle]);
    assert.deepEqual(outline, [true, 'none'], 'the title takes focus for screen readers, without a box');
    await shoot('server-record-configured');

    await go('#/live', 'Live traffic');
    await page.locator('.y-axis span').first().waitFor();
    assert.ok((await page.locator('.y-axis span').allInnerTexts()).includes('0'));
    const times = await page.locator('.x-axis span').allInnerTexts();
    assert.ok(times.length >= 2 && times.every((t) => /\d{1,2}:\d{2}/.test(t)), times.join(','));

    await go('#/policy/everything', 'Policy');
    assert.equal(await page.getByLabel('Policy (JSON or YAML)').evaluate((el) => getComputedStyle(el).whiteSpace), 'pre-wrap');
  });

  it('approves a held call so the client\'s call returns, and denies another with a reason the client reads', async () => {
    const client = await connect(aliceToken);
    await go('#/approvals', 'Approvals');
    await page.getByText('No call is waiting for approval.').waitFor();
    const held = (messageType: string) => client.callTool({ name: 'get-annotated-message', arguments: { messageType, includeImage: false, api_key: 'sk-live-held-call-secret' } });
    const first = held('success');
    const card = page.locator('#pending section.card', { hasText: 'get-annotated-message' });
    await card.waitFor();
    const text = await card.innerText();
    assert.match(text, /who\s+alice[\s\S]*rule\s+\/tools\/get-annotated-message[\s\S]*time left\s+\d+m/);
    assert.match(text, /"messageType": "success"/);
    assert.ok(text.includes('api_key') && !text.includes('sk-live-held-call-secret'), 'the secret-looking argument is masked');
    await shoot('approvals');
    await card.getByRole('button', { name: /^Approve / }).click();
    await page.getByLabel('Reason').fill('looks fine');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const result = await first;
    assert.equal(denialText(result), undefined, 'the held call was forwarded once approved');
    await page.getByText('No call is waiting for approval.').waitFor();

    const second = held('error');
    await card.waitFor();
    await card.getByRole('button', { name: /^Deny / }).click();
    await page.getByLabel('Reason').fill('not during the release freeze');
    await page.getByRole('button', { name: 'Deny', exact: true }).click();
    assert.match(denialText(await second) ?? '', /^\[POLICY DENIED\].*not during the release freeze/);
    await page.locator('#recent tr', { hasText: 'not during the release freeze' }).waitFor();
    assert.match(await page.locator('#recent tr', { hasText: 'looks fine' }).innerText(), /approved|used/);
    // Decided through the dashboard's own session, so recorded as the dashboard (the admin token records api).
    const decided = await (await fetch(`${base}/api/approvals?limit=10`, { headers: { authorization: `Bearer ${ADMIN}` } })).json() as { decisionReason: string | null; decidedBy: string | null }[];
    assert.match(decided.find((a) => a.decisionReason === 'looks fine')?.decidedBy ?? '', /^dashboard:/);
    await shoot('approvals-decided');
  });

  it('creates a grant whose token works once copied, and revokes it so the next call is refused', async () => {
    await go('#/grants', 'Grants');
    await page.getByLabel('Server').selectOption('everything');
    await page.getByLabel('Label').fill('from-the-dashboard');
    await page.getByRole('button', { name: 'Create grant' }).click();
    const token = await page.getByLabel('Token', { exact: true }).inputValue();
    assert.match(token, /^tg_/);
    const snippet = JSON.parse(await page.getByLabel('.mcp.json', { exact: true }).inputValue());
    assert.equal(snippet.mcpServers.everything.url, `${base}/mcp/everything`);
    assert.equal(snippet.mcpServers.everything.headers.Authorization, `Bearer ${token}`);
    secretsSeen.push(token);
    await shoot('grant-created');
    const client = await connect(token);
    assert.equal(denialText(await client.callTool({ name: 'echo', arguments: { message: 'new grant' } })), undefined);
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    assert.equal(await page.getByLabel('Token', { exact: true }).count(), 0, 'the token is gone from the page');
    await page.getByRole('button', { name: 'Revoke from-the-dashboard' }).click();
    await page.getByRole('button', { name: 'Revoke', exact: true }).click();
    await page.locator('tr', { hasText: 'from-the-dashboard' }).getByText('revoked').waitFor();
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'after revoke' } }), /401|revoked/);
    await shoot('grants');
  });

  it('validates a policy as it is typed, refuses to save an invalid one, dry-runs and saves a fixed one that decides the next call', async () => {
    const client = await connect(aliceToken);
    await go('#/policy/everything', 'Policy');
    await page.locator('table', { hasText: 'echo' }).waitFor();
    assert.match(await page.locator('tr', { hasText: 'get-env' }).innerText(), /Hidden/);
    const editor = page.getByLabel('Policy (JSON or YAML)');
    const broken = { ...basePolicy, default: 'maybe', tools: { ...basePolicy.tools, echo: { action: 'deny', on_deny: 'Echo is off today.', deny_if: [{ conditions: [{ path: 'args.message', op: 'gt', value: 'x' }] }] } } };
    await editor.fill(JSON.stringify(broken, null, 2));
    await page.getByText('errors: saving is refused').waitFor();
    const messages = await page.locator('ul.issues li').allInnerTexts();
    assert.ok(messages.some((m) => m.startsWith(`${policyFile}:3:`) && m.includes('/default: must be one of "allow", "deny"')), messages.join('\n'));
    assert.ok(messages.some((m) => m.includes('/tools/echo/deny_if/0/conditions/0/value: operator "gt" takes a number')), messages.join('\n'));
    assert.equal(await page.getByRole('button', { name: 'Save and reload' }).isDisabled(), true);
    await shoot('policy-invalid');
    const refused = await page.evaluate(async (text) => {
      const csrf = (await (await fetch('/ui/session')).json()).csrf;
      const res = await fetch('/api/policies/everything', { method: 'PUT', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify({ text }) });
      return res.status;
    }, JSON.stringify(broken));
    assert.equal(refused, 400, 'the API refuses to save an invalid policy too');
    assert.deepEqual(JSON.parse(readFileSync(policyFile, 'utf8')), basePolicy);

    const fixed = { ...basePolicy, tools: { ...basePolicy.tools, echo: { action: 'deny', on_deny: 'Echo is off today.' } } };
    await editor.fill(JSON.stringify(fixed, null, 2));
    await page.getByText(/✓ valid/).waitFor();
    await page.getByRole('button', { name: 'Dry run (last day)' }).click();
    await page.locator('#dry-run-summary').waitFor();
    assert.match(await page.locator('#dry-run-summary').innerText(), /would be decided differently/);
    assert.ok(await page.locator('tr', { hasText: 'echo' }).filter({ hasText: 'deny' }).count() >= 1, 'the echo calls made earlier would now be denied');
    await shoot('policy-dry-run');
    await page.getByRole('button', { name: 'Save and reload' }).click();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText(/Saved; policy \w+ is live/).waitFor();
    assert.deepEqual(JSON.parse(readFileSync(policyFile, 'utf8')), fixed);
    assert.equal(denialText(await client.callTool({ name: 'echo', arguments: { message: 'after save' } })), '[POLICY DENIED] Echo is off today.');
  });

  it('flips the kill switch for a server and back, with a confirmation', async () => {
    const client = await connect(aliceToken);
    await go('#/servers', 'Servers');
    const card = page.locator('section.card', { has: page.getByRole('heading', { name: 'everything' }) });
    await card.getByRole('button', { name: 'Kill switch' }).click();
    await page.getByLabel('Reason').fill('incident 42');
    await page.getByRole('button', { name: 'Stop all calls' }).click();
    await card.getByText('Kill switch on').waitFor();
    assert.match(denialText(await client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } })) ?? '', /POLICY DENIED/);
    await shoot('kill-switch');
    await card.getByRole('button', { name: 'Resume calls' }).click();
    await page.getByRole('button', { name: 'Resume calls' }).last().click();
    await card.getByRole('button', { name: 'Kill switch' }).waitFor();
    assert.equal(denialText(await client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } })), undefined);
  });

  it('refuses a cross-site form post and a cookie request without the CSRF token', async () => {
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<form id="f" method="post" action="${base}/api/kill-switch" enctype="text/plain"><input name='{"on":true,"x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
    const evilPage = await context.newPage();
    const posted = evilPage.waitForResponse((res) => res.url().startsWith(`${base}/api/kill-switch`));
    await evilPage.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
    const res = await posted;
    assert.ok(res.status() === 401 || res.status() === 403, `refused with ${res.status()}`);
    await evilPage.close();
    evil.closeAllConnections();
    await new Promise<void>((r) => evil.close(() => r()));
    assert.deepEqual((await state.flags.listKillSwitches()).filter((k) => k.on), [], 'the kill switch stayed off');

    const [cookie] = await context.cookies(base);
    const noCsrf = await statusOf(`${base}/api/kill-switch`, { method: 'POST', headers: { cookie: `${cookie.name}=${cookie.value}`, origin: base, 'content-type': 'application/json' }, body: '{"on":true}' });
    assert.equal(noCsrf, 403);
    const foreign = await statusOf(`${base}/api/kill-switch`, { method: 'POST', headers: { cookie: `${cookie.name}=${cookie.value}`, origin: 'http://evil.example', 'content-type': 'application/json' }, body: '{"on":true}' });
    assert.equal(foreign, 403);
    assert.equal(await statusOf(`${base}/api/servers`, { headers: { cookie: `${cookie.name}=${cookie.value}` } }), 200, 'the cookie alone is enough to read');
  });

  it('never shows an admin token, a grant token or an upstream credential in any page or API response', () => {
    assert.ok(bodies.length > 20, `saw ${bodies.length} responses`);
    for (const { url, body } of bodies) for (const secret of secretsSeen) assert.ok(!body.includes(secret), `${url} contains a secret`);
  });

  it('words policy errors exactly as toolgate policy validate does', async () => {
    const file = join(dir, 'broken.yaml');
    const text = 'version: "1"\ndefault: maybe\ntools:\n  x:\n    deny_if:\n      - conditions: [{ path: args.a, op: regex, value: "(a" }]\n';
    writeFileSync(file, text);
    const cli = await exec(process.execPath, [BIN, 'policy', 'validate', file], { env: testEnv(join(dir, 'home')) }).then(() => '', (err: { stdout: string }) => err.stdout);
    const res = await fetch(`${base}/api/policies/validate`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ text, file }) });
    const body = await res.json() as { valid: boolean; issues: { text: string }[] };
    assert.equal(body.valid, false);
    assert.deepEqual(body.issues.map((i) => i.text), cli.trim().split('\n'));
  });

  it('accepts pins only for the definitions that were reviewed', async () => {
    const res = await fetch(`${base}/api/servers/everything/pins`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ fingerprint: 'f'.repeat(64) }) });
    assert.equal(res.status, 409);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /changed again since you reviewed them/);
  });

  it('signs in without JavaScript too (a form post), and refuses a forged or tampered cookie', async () => {
    const form = await fetch(`${base}/ui/session`, { method: 'POST', redirect: 'manual', headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${encodeURIComponent(ADMIN)}` });
    assert.equal(form.status, 303);
    await form.arrayBuffer();
    const cookie = form.headers.get('set-cookie')!.split(';')[0];
    assert.equal(await statusOf(`${base}/api/servers`, { headers: { cookie } }), 200);
    const tampered = cookie.replace(/=(\d+)\./, (_, exp: string) => `=${Number(exp) + 1000}.`);
    assert.equal(await statusOf(`${base}/api/servers`, { headers: { cookie: tampered } }), 401);
    const crossSite = await statusOf(`${base}/ui/session`, { method: 'POST', redirect: 'manual', headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${encodeURIComponent(ADMIN)}` });
    assert.equal(crossSite, 403);
  });

  it('signs out: the cookie no longer opens the API', async () => {
    const [cookie] = await context.cookies(base);
    await go('#/servers', 'Servers');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    assert.equal(await statusOf(`${base}/api/servers`, { headers: { cookie: `${cookie.name}=${cookie.value}` } }), 401);
  });
});

describe('admin event streams', () => {
  it('end when the gateway stops, so an open dashboard never holds up shutdown', { timeout: 20_000 }, async () => {
    const dir = tempDir('toolgate-streams-');
    const state = openSqliteState(join(dir, 'state.db'));
    const audit = new AuditLog(join(dir, 'audit.db'));
    const gateway = new Gateway({ config: GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin: { token: ADMIN } }), state, audit, log: pino({ level: 'silent' }) });
    const { port } = await gateway.start();
    const open = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      const reader = res.body!.getReader();
      await reader.read();
      return reader;
    };
    const streams = [await open('/api/audit/stream'), await open('/api/approvals/stream')];
    await gateway.stop();
    for (const reader of streams) {
      let done = false;
      while (!done) done = (await reader.read().catch(() => ({ done: true }))).done;
      assert.ok(done, 'the stream ended');
    }
    audit.close();
    await state.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
