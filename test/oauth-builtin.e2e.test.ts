import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema, parseGatewayConfig } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { approveOnConsentPage, TestOAuthProvider } from './helpers/oauth.js';
import { BIN, denialText, EVERYTHING, MEMORY, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);
const ADMIN = 'admin-token-for-oauth-tests-0123';

describe('the built-in OAuth authorization server', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let agentPolicy: string;
  let staticToken: string;

  before(async () => {
    dir = tempDir();
    const serverPolicy = writePolicy(dir, { version: '1', default: 'allow' }, 'server.json');
    agentPolicy = writePolicy(dir, {
      version: '1', default: 'allow', hide: ['get-env'],
      tools: { echo: { limits: [{ counter: 'echo', window: 'day', max: 2, scope: 'grant' }] } },
    }, 'agent.json');
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      admin: { token: ADMIN },
      oauth: { builtin: true, max_pending_clients: 3, registrations_per_address: 1000 },
      servers: {
        everything: { command: process.execPath, args: [EVERYTHING], policy: serverPolicy },
        memory: { command: process.execPath, args: [MEMORY], policy: serverPolicy, env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
      },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: process.env.TEST_LOG ?? 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    staticToken = (await new Grants(state.grants).create({ server: 'everything', label: 'static-ci' })).token;
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  const cli = async (...args: string[]) => JSON.parse((await exec(process.execPath, [BIN, ...args, '--state', `sqlite:${join(dir, 'state.db')}`, '--json'], { env: testEnv(dir) })).stdout);

  /** The SDK client's whole flow: 401, discovery, registration, consent, token, then connected. */
  async function signIn(provider: TestOAuthProvider, server = 'everything'): Promise<Client> {
    const url = new URL(`${base}/mcp/${server}`);
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await assert.rejects(new Client({ name: 'oauth-test', version: '1' }).connect(first), UnauthorizedError);
    assert.ok(provider.code, `the consent page sent back a code (got ${provider.lastRedirect?.status} ${provider.lastRedirect?.location ?? provider.lastRedirect?.page.slice(0, 300)})`);
    await first.finishAuth(provider.code);
    const client = new Client({ name: 'oauth-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    return client;
  }

  it('answers a request without a token with 401 and a challenge that points at the server URL\'s metadata (RFC 9728 §5.1)', async () => {
    const path = '/mcp/everything';
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), `Bearer realm="toolgate", resource_metadata="${base}/.well-known/oauth-protected-resource${path}"`);
    // Every URL form of a server is its own resource, with the metadata where RFC 9728 §3.1 puts it.
    for (const p of [path, '/everything/mcp', '/sse/everything', '/everything/sse']) {
      const meta = await (await fetch(`${base}/.well-known/oauth-protected-resource${p}`)).json();
      assert.deepEqual(meta, { resource: `${base}${p}`, authorization_servers: [base], bearer_methods_supported: ['header'], resource_name: 'toolgate: everything' });
    }
    assert.equal((await fetch(`${base}/.well-known/oauth-protected-resource/mcp/nosuch`)).status, 404);
  });

  it('publishes RFC 8414 metadata: code flow with PKCE S256 only, public clients, registration and revocation', async () => {
    const meta = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    assert.equal(meta.issuer, base);
    assert.deepEqual(meta.response_types_supported, ['code']);
    assert.deepEqual(meta.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(meta.grant_types_supported, ['authorization_code', 'refresh_token']);
    for (const k of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint']) assert.ok(meta[k].startsWith(`${base}/oauth/`), k);
  });

  it('SDK client: discovery, registration, consent, token; calls decided by the grant\'s policy and limits; listed as a grant', async () => {
    const wrong = new TestOAuthProvider({ adminToken: 'not-the-admin-token', label: 'x' });
    await assert.rejects(new Client({ name: 'c', version: '1' }).connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/everything`), { authProvider: wrong })), UnauthorizedError);
    assert.equal(wrong.code, undefined);
    assert.equal(wrong.lastRedirect!.status, 401);
    assert.match(wrong.lastRedirect!.page, /not the admin token/);

    const provider = new TestOAuthProvider({ adminToken: ADMIN, label: 'sdk-agent', tags: 'team-a, ci', policy: agentPolicy });
    const client = await signIn(provider);
    assert.ok(provider.saved?.access_token && provider.saved.refresh_token);
    assert.equal(provider.saved.token_type, 'Bearer');
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('echo') && !tools.includes('get-env'), 'the grant\'s own policy hides get-env');
    for (let i = 0; i < 2; i++) assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: `call ${i}` } })).isError);
    assert.match(denialText(await client.callTool({ name: 'echo', arguments: { message: 'third' } }))!, /limit/i, 'the grant\'s limit of 2 holds');
    await client.close();

    const listed = (await cli('grants', 'list')) as { label: string; server: string; tags: string[]; policy?: string; expiresAt?: string }[];
    const grant = listed.find((g) => g.label === 'sdk-agent')!;
    assert.deepEqual({ server: grant.server, tags: grant.tags, policy: grant.policy }, { server: 'everything', tags: ['team-a', 'ci'], policy: agentPolicy });
    assert.ok(grant.expiresAt, 'the access token expires');
    assert.ok(!JSON.stringify(listed).includes(provider.saved!.access_token), 'no token is stored or shown');
  });

  it('refresh rotates both tokens; the old access token stops working; a refresh token used twice revokes the grant', async () => {
    const provider = new TestOAuthProvider({ adminToken: ADMIN, label: 'refresher' });
    (await signIn(provider)).close();
    const old = provider.saved!;
    assert.equal(await auth(provider, { serverUrl: new URL(`${base}/mcp/everything`) }), 'AUTHORIZED');
    const fresh = provider.saved!;
    assert.notEqual(fresh.access_token, old.access_token);
    assert.notEqual(fresh.refresh_token, old.refresh_token);
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    const post = (token: string) => fetch(`${base}/mcp/everything`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` }, body: JSON.stringify(init) });
    assert.equal((await post(old.access_token)).status, 401);
    assert.equal((await post(fresh.access_token)).status, 200);

    const replay = await fetch(`${base}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: old.refresh_token!, client_id: provider.client!.client_id }) });
    assert.equal(replay.status, 400);
    assert.equal((await replay.json()).error, 'invalid_grant');
    const afterReplay = await post(fresh.access_token);
    assert.equal(afterReplay.status, 401, 'a refresh token used twice means it leaked: the grant is revoked');
    assert.match(afterReplay.headers.get('www-authenticate')!, /error="invalid_token", error_description="the grant was revoked"/);
  });

  it('binds a token to its server (RFC 8707): another server refuses it, and a token for another resource is not issued', async () => {
    const provider = new TestOAuthProvider({ adminToken: ADMIN, label: 'bound' });
    (await signIn(provider)).close();
    const res = await fetch(`${base}/mcp/memory`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${provider.saved!.access_token}` }, body: '{}' });
    assert.equal(res.status, 403);
    assert.match((await res.json()).error.message, /for server "everything"/);
    const refresh = await fetch(`${base}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: provider.saved!.refresh_token!, client_id: provider.client!.client_id, resource: `${base}/mcp/memory` }) });
    assert.equal(refresh.status, 400);
    assert.equal((await refresh.json()).error, 'invalid_target');
    assert.equal(await auth(provider, { serverUrl: new URL(`${base}/mcp/everything`) }), 'AUTHORIZED', 'a refused refresh does not use the refresh token up');
  });

  it('revocation acts on the next request: toolgate grants revoke, and the RFC 7009 endpoint', async () => {
    const a = new TestOAuthProvider({ adminToken: ADMIN, label: 'revoked-by-cli' });
    const client = await signIn(a);
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'before' } })).isError);
    await cli('grants', 'revoke', 'revoked-by-cli');
    const raw = await fetch(`${base}/mcp/everything`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${a.saved!.access_token}` }, body: '{}' });
    assert.equal(raw.status, 401);
    assert.match((await raw.json()).error.message, /revoked/);
    // The SDK client answers the 401 by refreshing, which the revoked grant refuses too.
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'after' } }), /revoked|invalid_grant|InvalidGrant|refresh token/);
    const refresh = await fetch(`${base}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: a.saved!.refresh_token!, client_id: a.client!.client_id }) });
    assert.equal((await refresh.json()).error, 'invalid_grant', 'a revoked grant cannot be refreshed');

    const b = new TestOAuthProvider({ adminToken: ADMIN, label: 'revoked-by-client' });
    (await signIn(b)).close();
    const revoked = await fetch(`${base}/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ token: b.saved!.refresh_token!, client_id: b.client!.client_id }) });
    assert.equal(revoked.status, 200);
    const res = await fetch(`${base}/mcp/everything`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${b.saved!.access_token}` }, body: '{}' });
    assert.equal(res.status, 401);
  });

  it('static grant tokens keep working beside OAuth', async () => {
    const client = new Client({ name: 'static', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/everything`), { requestInit: { headers: { authorization: `Bearer ${staticToken}` } } }));
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'static' } })).isError);
    await client.close();
  });

  it('refuses what OAuth 2.1 and this gateway do not allow: no PKCE or plain PKCE, no resource, a foreign redirect, a reused code, a wrong verifier', async () => {
    const reg = await (await fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:18698/cb'], client_name: 'raw' }) })).json();
    const authorize = (params: Record<string, string>) => new URL(`${base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: reg.client_id, redirect_uri: 'http://127.0.0.1:18698/cb', state: 's1', resource: `${base}/mcp/everything`, code_challenge_method: 'S256', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', ...params })}`);
    const errorOf = async (params: Record<string, string>) => {
      const res = await fetch(authorize(params), { redirect: 'manual' });
      return res.status === 302 ? new URL(res.headers.get('location')!).searchParams.get('error') : `page ${res.status}`;
    };
    // Until a person approves the client, its redirect URI is anyone's: no error sends a browser there.
    for (const params of [{ code_challenge_method: 'plain' }, { resource: '' }, { response_type: 'token' }] as Record<string, string>[]) {
      assert.equal(await errorOf(params), 'page 400', `an unapproved client's error is shown, not redirected (${JSON.stringify(params)})`);
    }
    const pending = await (await fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['https://attacker.example/cb'], client_name: 'phish' }) })).json();
    const phish = new URL(`${base}/oauth/authorize?${new URLSearchParams({ response_type: 'token', client_id: pending.client_id, state: 'x' })}`);
    const page = await fetch(phish, { redirect: 'manual' });
    assert.equal(page.status, 400);
    assert.equal(page.headers.get('location'), null, 'the gateway is no open redirector for a client nobody approved');
    assert.match(await page.text(), /not approved yet/);
    const deniedFirst = await approveOnConsentPage(authorize({}), { adminToken: ADMIN, label: 'raw', decision: 'deny' });
    assert.equal(deniedFirst.location, undefined, 'denying a client that was never approved shows a page, no redirect');
    assert.equal(deniedFirst.status, 403);

    const first = await approveOnConsentPage(authorize({}), { adminToken: ADMIN, label: 'raw' });
    assert.ok(first.location?.searchParams.get('code'), 'approved on the consent page');
    // Approved: the client's own errors go back to it, as OAuth asks.
    assert.equal(await errorOf({ code_challenge_method: 'plain' }), 'invalid_request');
    assert.equal(await errorOf({ code_challenge: '' }), 'invalid_request');
    assert.equal(await errorOf({ resource: '' }), 'invalid_target');
    assert.equal(await errorOf({ resource: 'https://elsewhere.example/mcp/everything' }), 'invalid_target');
    assert.equal(await errorOf({ response_type: 'token' }), 'unsupported_response_type');
    assert.equal(await errorOf({ redirect_uri: 'https://attacker.example/cb' }), 'page 400', 'an unregistered redirect URI is never redirected to');
    assert.equal(await errorOf({ client_id: 'tgc_nosuch' }), 'page 400');

    const approved = await approveOnConsentPage(authorize({}), { adminToken: ADMIN, label: 'raw' });
    assert.equal(approved.location?.searchParams.get('state'), 's1');
    assert.equal(approved.location?.searchParams.get('iss'), base);
    const code = approved.location!.searchParams.get('code')!;
    const exchange = (verifier: string) => fetch(`${base}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: reg.client_id, redirect_uri: 'http://127.0.0.1:18698/cb' }) });
    assert.equal((await (await exchange('x'.repeat(43))).json()).error, 'invalid_grant', 'a wrong verifier is refused (and uses up the code)');
    assert.equal((await (await exchange('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).json()).error, 'invalid_grant', 'a code works once');

    const denied = await approveOnConsentPage(authorize({}), { adminToken: ADMIN, label: 'raw', decision: 'deny' });
    assert.equal(denied.location?.searchParams.get('error'), 'access_denied');
  });

  it('caps registrations that wait for approval, and checks redirect URIs', async () => {
    const register = (body: unknown) => fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal((await (await register({ redirect_uris: ['http://evil.example/cb'] })).json()).error, 'invalid_redirect_uri');
    assert.equal((await (await register({ redirect_uris: ['javascript:alert(1)'] })).json()).error, 'invalid_redirect_uri');
    assert.equal((await (await register({ client_name: 'no uris' })).json()).error, 'invalid_client_metadata');
    let refused = 0;
    for (let i = 0; i < 5; i++) if ((await register({ redirect_uris: ['http://127.0.0.1:18697/cb'] })).status === 429) refused++;
    assert.ok(refused >= 2, `at most 3 clients wait for approval (refused ${refused} of 5)`);
  });

  it('a built-in configuration without an admin token is refused', () => {
    const result = parseGatewayConfig('oauth: {builtin: true}\nservers: {}\n', dir);
    assert.equal(result.ok, false);
    assert.match(JSON.stringify(result), /needs admin.token/);
  });
});
