import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium, type Browser } from 'playwright-core';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import type { StateStore } from '../src/state/types.js';
import { TestOAuthProvider } from './helpers/oauth.js';
import { denialText, EVERYTHING, ROOT, tempDir, writePolicy } from './helpers/toolgate.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const MCP_REMOTE = join(ROOT, 'node_modules/mcp-remote/dist/proxy.js');
const ADMIN = 'admin-token-for-mcp-remote-0123';
const CALLBACK_PORT = '18610';

/** Lines a child writes to stderr, and a way to wait for the first one that matches. */
class Lines {
  private text = '';
  private waiters: { re: RegExp; from: number; resolve: (m: RegExpExecArray) => void }[] = [];
  add(chunk: string): void {
    this.text += chunk;
    this.waiters = this.waiters.filter((w) => {
      const m = w.re.exec(this.text.slice(w.from));
      if (m) w.resolve(m);
      return !m;
    });
  }
  get length(): number { return this.text.length; }
  next(re: RegExp, from = 0): Promise<RegExpExecArray> {
    const m = re.exec(this.text.slice(from));
    return m ? Promise.resolve(m) : new Promise((resolve) => this.waiters.push({ re, from, resolve }));
  }
  toString(): string { return this.text; }
}

/**
 * mcp-remote (npm), the stdio bridge most desktop clients use for remote servers, runs its whole
 * OAuth flow against the built-in authorization server; Debian's Chromium, driven by
 * playwright-core, is the person on the consent page.
 */
describe('mcp-remote through the consent page, in Chromium', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let browser: Browser;

  before(async () => {
    assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium`);
    dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow', tools: { 'get-sum': { action: 'deny', on_deny: 'no sums for remote agents' }, echo: { limits: [{ counter: 'echo', window: 'day', max: 3, scope: 'grant' }] } } });
    state = openMemoryState();
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({
      config: GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin: { token: ADMIN }, oauth: { builtin: true, access_token_ttl: '3s' }, servers: { everything: { command: process.execPath, args: [EVERYTHING], policy } } }),
      state, audit, log: pino({ level: process.env.TEST_LOG ?? 'silent' }),
    });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  });

  after(async () => {
    await browser?.close();
    await gateway.stop();
    audit.close();
  });

  it('registers, is approved in the browser, gets a grant whose policy and limits decide its calls, and loses it on revocation', async () => {
    const stderr = new Lines();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, `${base}/mcp/everything`, CALLBACK_PORT, '--host', '127.0.0.1'],
      // BROWSER=true: xdg-open "opens" the URL by doing nothing; the test's Chromium visits it instead.
      env: { ...(process.env as Record<string, string>), MCP_REMOTE_CONFIG_DIR: join(dir, 'mcp-auth'), BROWSER: 'true' },
      stderr: 'pipe',
    });
    transport.stderr!.on('data', (chunk: Buffer) => stderr.add(chunk.toString()));
    const client = new Client({ name: 'via-mcp-remote', version: '1' });
    const connected = client.connect(transport);

    const [, authorizationUrl] = await stderr.next(/Please authorize this client by visiting:\s+(\S+)/);
    assert.ok(authorizationUrl.startsWith(`${base}/oauth/authorize?`), authorizationUrl);
    const page = await browser.newPage();
    await page.goto(authorizationUrl);
    assert.match(await page.textContent('h1') ?? '', /Approve an MCP client/);
    await page.fill('#admin_token', ADMIN);
    await page.fill('#label', 'desktop-agent');
    await page.fill('#tags', 'remote');
    await Promise.all([page.waitForURL(/127\.0\.0\.1:18610\/oauth\/callback/), page.click('button[value=approve]')]);
    await page.close();
    await connected;

    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('echo'));
    assert.match(denialText(await client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } }))!, /no sums for remote agents/);
    for (let i = 0; i < 2; i++) assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: `m${i}` } })).isError);

    const grants = new Grants(state.grants);
    const grantOf = async () => (await grants.list()).find((g) => g.label === 'desktop-agent')!;
    const before = await grantOf();
    assert.deepEqual({ server: before.server, tags: before.tags }, { server: 'everything', tags: ['remote'] });
    // Refresh: once the 3-second access token has expired, mcp-remote's next call gets a 401,
    // refreshes (rotation: a new access and refresh token) and goes on, on the same grant.
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(before.expiresAt!) - Date.now()) + 200));
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'after expiry' } })).isError);
    const refreshed = await grantOf();
    assert.equal(refreshed.id, before.id);
    assert.ok(Date.parse(refreshed.expiresAt!) > Date.parse(before.expiresAt!), 'the grant carries a new access token');
    assert.match(denialText(await client.callTool({ name: 'echo', arguments: { message: 'over' } }))!, /limit/i, 'the grant\'s limit of 3 counts across refreshes');

    await grants.revoke('desktop-agent');
    const mark = stderr.length;
    const call = client.callTool({ name: 'echo', arguments: { message: 'after revocation' } }).then(() => 'answered', () => 'refused');
    // Refused on the next request: mcp-remote's refresh is refused too, and it asks for a new sign-in.
    const outcome = await Promise.race([call, stderr.next(/Please authorize this client by visiting/, mark).then(() => 'asks to sign in again')]);
    assert.notEqual(outcome, 'answered');
    await client.close();
  });

  it('on a gateway with static grants only, mcp-remote and the SDK start no OAuth flow: they show the hint; mcp-remote works with --header', async () => {
    const staticState = openMemoryState();
    const staticGateway = new Gateway({
      config: GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers: { everything: { command: process.execPath, args: [EVERYTHING], policy: writePolicy(dir, { version: '1', default: 'allow' }, 'allow.json') } } }),
      state: staticState, audit, log: pino({ level: 'silent' }),
    });
    const url = `http://127.0.0.1:${(await staticGateway.start()).port}/mcp/everything`;
    const run = async (extra: string[]) => {
      const stderr = new Lines();
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MCP_REMOTE, url, '18620', '--host', '127.0.0.1', ...extra],
        env: { ...(process.env as Record<string, string>), MCP_REMOTE_CONFIG_DIR: join(dir, 'mcp-auth-static'), BROWSER: 'true' },
        stderr: 'pipe',
      });
      transport.stderr!.on('data', (chunk: Buffer) => stderr.add(chunk.toString()));
      const client = new Client({ name: 'static-via-mcp-remote', version: '1' });
      const connected = await client.connect(transport).then(() => true, () => false);
      return { client, connected, stderr: stderr.toString() };
    };
    try {
      const bare = await run([]);
      assert.equal(bare.connected, false);
      assert.doesNotMatch(bare.stderr, /Please authorize|register/i, 'no OAuth flow was started');
      assert.match(bare.stderr, /403/);
      await bare.client.close();

      // The SDK's own transport with an OAuth provider: same outcome, no registration, no redirect.
      const provider = new TestOAuthProvider({ adminToken: 'unused', label: 'unused' });
      await assert.rejects(new Client({ name: 'sdk', version: '1' }).connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider })), (err: Error & { code?: number }) => err.code === 403 && /grant tokens only/.test(err.message));
      assert.equal(provider.client, undefined, 'no client was registered');
      assert.equal(provider.lastRedirect, undefined, 'no browser was sent anywhere');

      const token = (await new Grants(staticState.grants).create({ server: 'everything', label: 'header-user' })).token;
      const withHeader = await run(['--header', `Authorization:Bearer ${token}`]);
      assert.equal(withHeader.connected, true, withHeader.stderr);
      assert.ok(!(await withHeader.client.callTool({ name: 'echo', arguments: { message: 'static' } })).isError);
      await withHeader.client.close();
    } finally {
      await staticGateway.stop();
    }
  });
});
