import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema, parseGatewayConfig } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { until } from './helpers/approvals.js';
import { BIN, denialText, EVERYTHING, LENIENT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);
const ADMIN = 'admin-token-for-tests-0123456789';

describe('toolgate serve: the gateway', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let logs = '';
  const tokens: Record<string, string> = {};
  const grantIds: Record<string, string> = {};

  before(async () => {
    dir = tempDir();
    const policy = writePolicy(dir, {
      version: '1', default: 'allow', hide: ['get-env'],
      tools: { 'get-sum': { limits: [{ counter: 'sum', window: 'day', max: 2, scope: 'grant' }] } },
    });
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      admin: { token: ADMIN },
      // Long: on a busy machine a 2 s idle timeout reaped sessions in the middle of tests.
      sessions: { idle_timeout: '15m', max_body: '64kb' },
      servers: {
        everything: { command: process.execPath, args: [EVERYTHING], policy },
        lenient: { command: process.execPath, args: [LENIENT], auth: 'none', env: { LENIENT_LOG: join(dir, 'lenient.log') }, policy: writePolicy(dir, { version: '1', default: 'allow', tools: { refund: { limits: [{ counter: 'refund', window: 'day', max: 3, scope: 'server' }] } } }, 'allow.json') },
      },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    const sink = new Writable({ write(chunk, _enc, done) { logs += chunk.toString(); done(); } });
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'debug' }, sink) });
    const { port } = await gateway.start();
    base = `http://127.0.0.1:${port}`;
    const grants = new Grants(state.grants);
    for (const label of ['alice', 'bob', 'carol']) {
      const { grant, token } = await grants.create({ server: 'everything', label });
      tokens[label] = token;
      grantIds[label] = grant.id;
    }
    tokens.other = (await grants.create({ server: 'lenient', label: 'other' })).token;
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  async function connect(server: string, token?: string, capabilities = {}): Promise<Client> {
    const client = new Client({ name: `client-${token?.slice(-4) ?? 'anon'}`, version: '1' }, { capabilities });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/${server}`), { requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} } });
    await client.connect(transport);
    return client;
  }

  async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: res.status, body: await res.text(), headers: res.headers };
  }
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

  it('serves a policy-checked server over Streamable HTTP', async () => {
    const client = await connect('everything', tokens.alice);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('echo') && !names.includes('get-env'));
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'through the gateway' } });
    assert.match(JSON.stringify(echo.content), /through the gateway/);
    assert.match(denialText(await client.callTool({ name: 'get-env', arguments: {} }))!, /not available/);
    await client.close();
  });

  it('speaks the legacy HTTP+SSE transport at /sse/<server>', async () => {
    const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
    const auth = { Authorization: `Bearer ${tokens.alice}` };
    const transport = new SSEClientTransport(new URL(`${base}/sse/everything`), {
      requestInit: { headers: auth },
      eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...auth } }) },
    });
    const client = new Client({ name: 'legacy', version: '1' });
    await client.connect(transport);
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'over legacy SSE' } });
    assert.match(JSON.stringify(echo.content), /over legacy SSE/);
    assert.match(denialText(await client.callTool({ name: 'get-env', arguments: {} }))!, /not available/);
    await client.close();
    const refused = await fetch(`${base}/sse/everything`);
    assert.equal(refused.status, 403, 'static grants only: 403, so no client starts an OAuth flow');
  });

  it('a changed policy file reaches open sessions; an invalid one is refused', async () => {
    const client = await connect('everything', tokens.bob);
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'before' } })).isError);
    const file = join(dir, 'policy.json');
    const original = readFileSync(file, 'utf8');
    const changed = JSON.parse(original);
    changed.tools.echo = { action: 'deny', on_deny: 'No echo today.' };
    writeFileSync(file, JSON.stringify(changed));
    const deadline = Date.now() + 5000;
    let r = await client.callTool({ name: 'echo', arguments: { message: 'after' } });
    while (!r.isError && Date.now() < deadline) { await new Promise((ok) => setTimeout(ok, 100)); r = await client.callTool({ name: 'echo', arguments: { message: 'after' } }); }
    assert.equal(denialText(r), '[POLICY DENIED] No echo today.');
    writeFileSync(file, '{ "version": "1", ');
    await new Promise((ok) => setTimeout(ok, 600));
    assert.equal(denialText(await client.callTool({ name: 'echo', arguments: { message: 'still' } })), '[POLICY DENIED] No echo today.', 'the previous policy stays');
    writeFileSync(file, original);
    const end = Date.now() + 5000;
    while ((await client.callTool({ name: 'echo', arguments: { message: 'x' } })).isError && Date.now() < end) await new Promise((ok) => setTimeout(ok, 100));
    await client.close();
  });

  it('an upstream that only speaks legacy SSE is reached through the fallback (toolgate run --upstream …/sse/…)', async () => {
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const home = tempDir();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'run', '-p', writePolicy(home, { version: '1', default: 'allow', hide: ['delete_all'] }), '--upstream', `${base}/sse/lenient`],
      env: testEnv(home), stderr: 'pipe',
    });
    const client = new Client({ name: 'via-sse', version: '1' });
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('echo') && !names.includes('delete_all'));
    assert.match(JSON.stringify((await client.callTool({ name: 'echo', arguments: { via: 'sse' } })).content), /echo ran with .*via.*sse/);
    const open = gateway.sessionCount;
    await client.close();
    for (let i = 0; i < 50 && gateway.sessionCount >= open; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(gateway.sessionCount, open - 1, 'the SSE session ends with its stream');
  });

  it('two grants on one server have separate limits', async () => {
    const alice = await connect('everything', tokens.alice);
    const bob = await connect('everything', tokens.bob);
    for (let i = 0; i < 2; i++) assert.ok(!(await alice.callTool({ name: 'get-sum', arguments: { a: 1, b: 1 } })).isError);
    assert.match(denialText(await alice.callTool({ name: 'get-sum', arguments: { a: 1, b: 1 } }))!, /Limit reached/);
    assert.ok(!(await bob.callTool({ name: 'get-sum', arguments: { a: 1, b: 1 } })).isError, 'bob has his own count');
    await alice.close();
    await bob.close();
    const rows = audit.query({ tool: 'get-sum' });
    assert.ok(rows.some((r) => r.grant_label === 'alice' && r.decision === 'deny'));
    assert.ok(rows.every((r) => r.session && r.instance && r.client?.startsWith('client-')));
  });

  it('refuses missing, unknown and other servers\' tokens with JSON-RPC error bodies, and forwards nothing', async () => {
    const none = await post('/mcp/everything', init);
    assert.equal(none.status, 403, 'static grants only: 403, so no client starts an OAuth flow');
    assert.equal(JSON.parse(none.body).error.code, -32000);
    assert.match(JSON.parse(none.body).error.message, /grant tokens only.*Authorization: Bearer/);
    assert.match(none.headers.get('www-authenticate')!, /^Bearer realm="toolgate", error="invalid_token"/);
    assert.equal((await post('/mcp/everything', init, { authorization: 'Bearer tg_nope' })).status, 403);
    assert.equal((await post('/mcp/everything', init, { authorization: `Bearer ${tokens.other}` })).status, 403);
    assert.equal((await post('/mcp/nosuch', init, { authorization: `Bearer ${tokens.alice}` })).status, 404);
  });

  it('a revoked token is refused on the next request, inside an open session too', async () => {
    const client = await connect('everything', tokens.carol);
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'before' } })).isError);
    await new Grants(state.grants).revoke(grantIds.carol);
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'after' } }), /403|revoked/);
    await client.close().catch(() => {});
  });

  it('checks Host and Origin against DNS rebinding, and limits the body size', async () => {
    const port = new URL(base).port;
    const badHost = await new Promise<number>((resolve) => {
      import('node:http').then(({ request }) => {
        const req = request({ host: '127.0.0.1', port, path: '/mcp/everything', method: 'POST', headers: { host: `evil.example:${port}`, 'content-type': 'application/json' } }, (res) => { res.resume(); resolve(res.statusCode!); });
        req.end(JSON.stringify(init));
      });
    });
    assert.equal(badHost, 403);
    assert.equal((await post('/mcp/everything', init, { origin: 'https://evil.example', authorization: `Bearer ${tokens.alice}` })).status, 403);
    assert.notEqual((await post('/mcp/everything', init, { origin: `http://localhost:${port}`, authorization: `Bearer ${tokens.alice}` })).status, 403);
    const big = await post('/mcp/everything', { ...init, pad: 'x'.repeat(100_000) }, { authorization: `Bearer ${tokens.alice}` });
    assert.equal(big.status, 413);
    assert.equal(JSON.parse(big.body).jsonrpc, '2.0');
  });

  it('keeps sessions apart: one session\'s logging and sampling never reach another', async () => {
    const got: Record<string, string[]> = { a: [], b: [] };
    const a = await connect('everything', tokens.alice, { sampling: {} });
    const b = await connect('everything', tokens.bob, { sampling: {} });
    for (const [k, c] of [['a', a], ['b', b]] as const) {
      c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { got[k].push(JSON.stringify(n.params)); });
      c.setRequestHandler(CreateMessageRequestSchema, async () => { got[k].push('sampling'); return { model: 'm', role: 'assistant', content: { type: 'text', text: `answer for ${k}` } }; });
    }
    await a.setLoggingLevel('debug');
    await b.setLoggingLevel('debug');
    const sampled = await a.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 5 } });
    assert.match(JSON.stringify(sampled.content), /answer for a/);
    const progress: number[] = [];
    await a.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    assert.ok(progress.length >= 2, JSON.stringify(progress));
    assert.ok(got.a.includes('sampling'));
    assert.ok(!got.b.includes('sampling'), 'b was never asked to sample');
    await a.close();
    await b.close();
  });

  it('an upstream that dies fails its own session only', async () => {
    const a = await connect('lenient');
    const b = await connect('lenient');
    await assert.rejects(a.callTool({ name: 'exit', arguments: {} }), /unavailable|exited/);
    assert.match(JSON.stringify((await b.callTool({ name: 'echo', arguments: {} })).content), /echo ran/);
    await a.close().catch(() => {});
    await b.close();
  });

  it('a client that disconnects cancels its call upstream', async () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const res = await fetch(`${base}/mcp/lenient`, { method: 'POST', headers, body: JSON.stringify(init) });
    await res.text();
    const sid = res.headers.get('mcp-session-id')!;
    const abort = new AbortController();
    const call = fetch(`${base}/mcp/lenient`, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 'slow-1', method: 'tools/call', params: { name: 'hang', arguments: {} } }), signal: abort.signal });
    const logFile = join(dir, 'lenient.log');
    const seen = () => { try { return readFileSync(logFile, 'utf8'); } catch { return ''; } };
    for (let i = 0; i < 100 && !seen().includes('slow-1'); i++) await new Promise((r) => setTimeout(r, 50));
    // The answer is held until the server says something, so the client hangs up before any header.
    abort.abort();
    await call.catch(() => {});
    for (let i = 0; i < 100 && !seen().includes('notifications/cancelled'); i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(seen(), /"method":"notifications\/cancelled","params":\{"requestId":"slow-1","reason":"the client disconnected"\}/);
  });

  async function rawSession(protocolVersion = '2025-11-25'): Promise<Record<string, string>> {
    const opened = await post('/mcp/lenient', { ...init, params: { ...init.params, protocolVersion } });
    assert.equal(opened.status, 200);
    return { 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': protocolVersion };
  }
  const call = (id: string, name: string, args: object = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const sseEvents = (text: string) => text.split('\n\n').filter((e) => e.trim() !== '');

  it('Streamable HTTP: a plain answer is one JSON body; a call the server talks about first becomes an SSE stream with a priming event', async () => {
    const h = await rawSession();
    const plain = await post('/mcp/lenient', call('p1', 'echo'), h);
    assert.equal(plain.headers.get('content-type'), 'application/json');
    assert.equal(JSON.parse(plain.body).id, 'p1');
    const chatty = await post('/mcp/lenient', call('c1', 'chatty'), h);
    assert.match(chatty.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = sseEvents(chatty.body);
    assert.match(events[0], /^id: \S+\nretry: 1000\ndata: $/, 'a priming event first');
    assert.match(events[1], /"method":"notifications\/message".*working on c1/);
    assert.match(events[2], /"id":"c1".*chatty done/);
    assert.equal(events.length, 3, 'news about no request goes to the GET stream, not this one');
    const slow = await post('/mcp/lenient', call('s1', 'slow', { ms: 2800 }), h);
    assert.match(slow.headers.get('content-type') ?? '', /^text\/event-stream/, 'an answer held 2 s becomes a stream, so proxies see the connection alive');
    assert.match(sseEvents(slow.body)[0], /^id: \S+\nretry: 1000\ndata: $/);
    assert.match(sseEvents(slow.body).at(-1)!, /"id":"s1".*slow done/);
    const old = await post('/mcp/lenient', call('c2', 'chatty'), await rawSession('2025-06-18'));
    assert.doesNotMatch(sseEvents(old.body)[0], /retry:/, 'no priming event for clients older than 2025-11-25');
  });

  it('Streamable HTTP: batches (MCP 2025-03-26) answer in request order; an id in flight is refused and not forwarded; bad headers get 406, 415 and 400', async () => {
    const batch = await post('/mcp/lenient', [call('b1', 'slow', { ms: 80 }), call('b2', 'echo')], await rawSession('2025-03-26'));
    assert.deepEqual(JSON.parse(batch.body).map((m: { id: string }) => m.id), ['b1', 'b2']);
    const h = await rawSession();
    const logFile = join(dir, 'lenient.log');
    const seen = () => { try { return readFileSync(logFile, 'utf8'); } catch { return ''; } };
    const hangUp = new AbortController();
    const first = fetch(`${base}/mcp/lenient`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...h }, body: JSON.stringify(call('dup-1', 'hang')), signal: hangUp.signal });
    for (let i = 0; i < 100 && !seen().includes('dup-1'); i++) await new Promise((r) => setTimeout(r, 20));
    const again = await post('/mcp/lenient', call('dup-1', 'echo', { second: true }), h);
    assert.equal(again.status, 400);
    assert.match(JSON.parse(again.body).error.message, /already in use/);
    await new Promise((r) => setTimeout(r, 100));
    assert.doesNotMatch(seen(), /"second":true/);
    assert.equal((await post('/mcp/lenient', call('x', 'echo'), { ...h, accept: 'application/json' })).status, 406);
    assert.equal((await post('/mcp/lenient', call('x', 'echo'), { ...h, 'content-type': 'text/plain' })).status, 415);
    assert.equal((await post('/mcp/lenient', call('x', 'echo'), { ...h, 'mcp-protocol-version': '1999-01-01' })).status, 400);
    assert.equal((await post('/mcp/lenient', { jsonrpc: '1.0', id: 'x', method: 'ping' }, h)).status, 400);
    assert.equal((await post('/mcp/lenient', init, h)).status, 400, 'a second initialize');
    const sessions = gateway.sessionCount;
    assert.equal((await post('/mcp/lenient', [init, call('x', 'echo')])).status, 400, 'initialize with company');
    assert.equal((await post('/mcp/lenient', { ...init, jsonrpc: '1.0' })).status, 400);
    assert.equal(gateway.sessionCount, sessions, 'a refused initialize leaves no session behind');
    hangUp.abort();
    await first.catch(() => {});
  });

  it('one session\'s calls read in one turn are decided together: exact limits, answers and forwarding in request order, a notification after them', async () => {
    const h = await rawSession('2025-03-26');
    const ids = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
    // One body (a batch, so MCP 2025-03-26): every call reaches the session in the same event-loop turn.
    const notice = { jsonrpc: '2.0', method: 'notifications/roots/list_changed', params: { after: 'r6' } };
    const res = await post('/mcp/lenient', [...ids.map((id) => call(id, 'refund', { id })), notice], h);
    const answers = JSON.parse(res.body) as { id: string; result: { isError?: boolean } }[];
    assert.deepEqual(answers.map((a) => a.id), ids);
    assert.deepEqual(answers.map((a) => a.result.isError === true), [false, false, false, true, true, true], 'the first three in request order, no more');
    // The notification has no answer to wait for: the server may log it just after the HTTP answer left.
    const forwarded = await until(() => {
      const lines = readFileSync(join(dir, 'lenient.log'), 'utf8').split('\n').filter((l) => l.includes('"r') || l.includes('"after"'));
      return lines.some((l) => l.includes('"after"')) ? lines : undefined;
    }, 'the notification to reach the server');
    const order = forwarded.map((l) => (l.includes('"after"') ? 'notice' : /"id":"(r\d)"/.exec(l)?.[1])).filter((x) => x === 'notice' || (x !== undefined && ids.includes(x)));
    assert.deepEqual(order, ['r1', 'r2', 'r3', 'notice']);
  });

  it('Streamable HTTP: the GET stream carries news about no request, one per session, and resumes after Last-Event-ID; DELETE ends the session', async () => {
    const h = await rawSession();
    const get = (extra: Record<string, string> = {}, signal?: AbortSignal) => fetch(`${base}/mcp/lenient`, { headers: { accept: 'text/event-stream', ...h, ...extra }, signal });
    const abort = new AbortController();
    const stream = await get({}, abort.signal);
    assert.equal(stream.status, 200);
    assert.equal((await get()).status, 409, 'one GET stream per session');
    assert.equal((await get({ accept: 'application/json' })).status, 406);
    await post('/mcp/lenient', call('g1', 'chatty'), h);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('list_changed')) text += (await reader.read()).value ?? '';
    abort.abort();
    const events = sseEvents(text);
    const priming = /^id: (\S+)/.exec(events[0])![1];
    assert.match(events[1], /notifications\/tools\/list_changed/);
    await new Promise((r) => setTimeout(r, 50));
    const resumed = await get({ 'last-event-id': priming });
    const reader2 = resumed.body!.pipeThrough(new TextDecoderStream()).getReader();
    let replay = '';
    while (!replay.includes('list_changed')) replay += (await reader2.read()).value ?? '';
    await reader2.cancel();
    const ended = await fetch(`${base}/mcp/lenient`, { method: 'DELETE', headers: h });
    assert.equal(ended.status, 200);
    assert.equal((await post('/mcp/lenient', call('after', 'echo'), h)).status, 404);
  });

  it('reaps idle sessions and ends their upstream processes', async () => {
    // A gateway of its own with a 1 s idle timeout; the test waits for the reaping, however long the machine takes.
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', sessions: { idle_timeout: '1s' },
      servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none', policy: writePolicy(dir, { version: '1', default: 'allow' }, 'reap.json') } },
    });
    const reaping = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    const { port } = await reaping.start();
    try {
      const client = new Client({ name: 'idle', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/lenient`)));
      assert.equal(reaping.sessionCount, 1);
      while (reaping.sessionCount > 0) await new Promise((r) => setTimeout(r, 100));
      await assert.rejects(client.listTools(), /Session not found/);
      await client.close().catch(() => {});
    } finally {
      await reaping.stop();
    }
  });

  it('the admin API: servers, grants, kill switch, audit — only with the admin token', async () => {
    const api = (path: string, init: RequestInit = {}, token: string | null = ADMIN) => fetch(`${base}${path}`, { ...init, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) } });
    assert.equal((await api('/api/servers', {}, null)).status, 401);
    assert.equal((await api('/api/servers', {}, tokens.alice)).status, 401, 'a grant is not an admin token');
    const servers = await (await api('/api/servers')).json();
    assert.deepEqual(servers.map((s: any) => s.name), ['everything', 'lenient']);
    const created = await (await api('/api/grants', { method: 'POST', body: JSON.stringify({ server: 'everything', label: 'api-made', tags: ['x'] }) })).json();
    assert.match(created.token, /^tg_/);
    const client = await connect('everything', created.token);
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'hi' } })).isError);
    const killed = await api('/api/kill-switch', { method: 'POST', body: JSON.stringify({ on: true, server: 'everything', reason: 'test' }) });
    assert.equal(killed.status, 200);
    const denied = await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
    assert.equal((denied._meta as any)['dev.toolgate/decision'].rule, '(kill-switch)');
    await api('/api/kill-switch', { method: 'POST', body: JSON.stringify({ on: false, server: 'everything' }) });
    assert.ok(!(await client.callTool({ name: 'echo', arguments: { message: 'again' } })).isError);
    assert.equal((await api(`/api/grants/${created.id}`, { method: 'DELETE' })).status, 200);
    await assert.rejects(client.callTool({ name: 'echo', arguments: { message: 'revoked' } }));
    await client.close().catch(() => {});
    const rows = await (await api('/api/audit?grant=api-made&limit=10')).json();
    assert.ok(rows.some((r: any) => r.rule === '(kill-switch)'));
    assert.ok(Array.isArray(await (await api('/api/approvals')).json()));
    assert.equal((await api('/api/audit?since=forever')).status, 400);
    const policies = await (await api('/api/policies')).json();
    assert.ok(policies.every((p: any) => p.valid));
  });

  it('/healthz and /metrics', async () => {
    const health = await (await fetch(`${base}/healthz`)).json();
    assert.equal(health.status, 'ok');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /toolgate_calls_total\{server="everything",tool="get-sum",decision="deny"\} 1/);
    assert.match(metrics, /toolgate_calls_total\{server="everything",tool="\(unlisted\)",decision="deny"\}/);
    assert.match(metrics, /toolgate_decision_seconds_bucket/);
    assert.match(metrics, /toolgate_auth_failures_total\{server="everything"\} [1-9]/);
  });

  it('no token value appears in any log, audit row or metric', async () => {
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const auditDump = JSON.stringify(audit.query({ limit: 100_000 }));
    for (const token of Object.values(tokens)) {
      assert.ok(!logs.includes(token), 'logs');
      assert.ok(!auditDump.includes(token), 'audit');
      assert.ok(!metrics.includes(token), 'metrics');
    }
    // Audited once a minute per address with a count (test/hardening.e2e.test.ts); counted at once.
    assert.match(metrics, /toolgate_auth_failures_total\{server="everything"\} [1-9]/, 'failed attempts are counted');
  });
});

describe('gateway configuration', () => {
  it('reports every error with its pointer and position, and reads ${VAR} and ${file:…}', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'key.txt'), 'from-a-file\n');
    process.env.TOOLGATE_TEST_SECRET = 'from-env';
    const ok = parseGatewayConfig([
      'listen: 127.0.0.1:9000',
      'servers:',
      '  api:',
      '    url: https://api.example.com/mcp',
      '    headers: { Authorization: "Bearer ${TOOLGATE_TEST_SECRET}", X-Key: "${file:key.txt}" }',
      '    policy: ./p.json',
    ].join('\n'), dir);
    assert.ok(ok.ok);
    const api = ok.value.servers.api as { headers: Record<string, string>; policy: string };
    assert.deepEqual(api.headers, { Authorization: 'Bearer from-env', 'X-Key': 'from-a-file' });
    assert.equal(api.policy, join(dir, 'p.json'));
    const bad = parseGatewayConfig(['listen: nowhere', 'servers:', '  x:', '    command: node', '    colour: blue', '  y:', '    url: "${NO_SUCH_VAR_XYZ}"'].join('\n'), dir);
    assert.equal(bad.ok, false);
    const got = !bad.ok ? bad.issues.map((i) => `${i.pointer}${i.line ? `@${i.line}` : ''}`) : [];
    assert.ok(got.includes('/listen@1'), JSON.stringify(got));
    assert.ok(got.some((g) => g.startsWith('/servers/x')), JSON.stringify(got));
    assert.ok(got.includes('/servers/y/url@7'), JSON.stringify(got));
  });

  it('refuses auth: none on a non-loopback address, at start and on reload', async () => {
    const dir = tempDir();
    const config = GatewayConfigSchema.parse({ listen: '0.0.0.0:0', servers: { open: { command: 'true', auth: 'none' } } });
    const state = openSqliteState(join(dir, 's.db'));
    const audit = new AuditLog(join(dir, 'a.db'));
    await assert.rejects(new Gateway({ config, state, audit, log: pino({ level: 'silent' }) }).start(), /refused on the non-loopback address/);
    const closed = GatewayConfigSchema.parse({ listen: '0.0.0.0:0', servers: { shut: { command: 'true' } } });
    const gw = new Gateway({ config: closed, state, audit, log: pino({ level: 'silent' }) });
    assert.throws(() => gw.setConfig(config), /refused on the non-loopback address/, 'a reload cannot open a server either');
    audit.close();
    await state.close();
  });
});

describe('toolgate grants', () => {
  it('create prints the token once as JSON; list never shows it; rotate and revoke by label', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const created = JSON.parse((await exec(process.execPath, [BIN, 'grants', 'create', '--server', 'github', '--label', 'ci-runner', '--tags', 'ci,prod', '--expires', '30d', '--json'], { env })).stdout);
    assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'expiresAt', 'id', 'label', 'server', 'tags', 'token']);
    assert.match(created.token, /^tg_[A-Za-z0-9_-]{43}$/);
    const list = (await exec(process.execPath, [BIN, 'grants', 'list', '--json'], { env })).stdout;
    assert.ok(!list.includes(created.token));
    assert.deepEqual(JSON.parse(list)[0].tags, ['ci', 'prod']);
    const rotated = JSON.parse((await exec(process.execPath, [BIN, 'grants', 'rotate', 'ci-runner', '--json'], { env })).stdout);
    assert.notEqual(rotated.token, created.token);
    await exec(process.execPath, [BIN, 'grants', 'revoke', created.id], { env });
    const again = await exec(process.execPath, [BIN, 'grants', 'revoke', created.id], { env }).catch((e) => e);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already revoked/);
    const db = readFileSync(join(home, 'state.db'));
    assert.ok(!db.includes(Buffer.from(created.token)) && !db.includes(Buffer.from(rotated.token)), 'only hashes are stored');
  });
});

describe('toolgate serve from the command line', () => {
  async function startServe(args: string[], home: string): Promise<{ base: string; out: () => string; stop: () => Promise<number | null> }> {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: testEnv(home, { TOOLGATE_LOG_LEVEL: 'info' }) });
    let err = '';
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const base = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        err += d;
        const m = /"listen":"(http:\/\/[^"]+)"/.exec(err);
        if (m) resolve(m[1]);
      });
      child.on('exit', () => reject(new Error(`serve exited: ${err}`)));
    });
    return {
      base,
      out: () => out + err,
      stop: () => { child.kill('SIGTERM'); return new Promise((r) => child.on('exit', (code) => r(code))); },
    };
  }

  it('with no config, runs the demo on embedded defaults and prints a working grant and .mcp.json', async () => {
    const home = tempDir();
    const serve = await startServe(['--listen', '127.0.0.1:0'], home);
    try {
      while (!serve.out().includes('"mcpServers"')) await new Promise((r) => setTimeout(r, 100));
      const token = /token[^\n]*\n\s+(tg_\S+)/.exec(serve.out())?.[1] ?? /(tg_[A-Za-z0-9_-]{43})/.exec(serve.out())![1];
      assert.match(serve.out(), /"mcpServers"/);
      const client = new Client({ name: 'demo', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${serve.base}/mcp/everything`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      const tools = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(tools.includes('echo'));
      assert.match(JSON.stringify((await client.callTool({ name: 'echo', arguments: { message: 'demo' } })).content), /demo/);
      await client.close();
    } finally {
      assert.equal(await serve.stop(), 0);
    }
  });

  it('loads a config file and picks up an added server without a restart', async () => {
    const home = tempDir();
    const cfg = join(home, 'toolgate.yaml');
    writeFileSync(cfg, `servers:\n  one:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(LENIENT)}]\n    auth: none\n`);
    const serve = await startServe(['-c', cfg, '--listen', '127.0.0.1:0'], home);
    try {
      const initBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
      const hit = (name: string) => fetch(`${serve.base}/mcp/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: initBody }).then((r) => r.status);
      assert.equal(await hit('one'), 200);
      assert.equal(await hit('two'), 404);
      writeFileSync(cfg, readFileSync(cfg, 'utf8') + `  two:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(LENIENT)}]\n    auth: none\n`);
      const deadline = Date.now() + 5000;
      while ((await hit('two')) !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await hit('two'), 200);
    } finally {
      await serve.stop();
    }
  });

  it('an invalid config is refused at start in one line per error, exit 2', async () => {
    const home = tempDir();
    const cfg = join(home, 'bad.yaml');
    writeFileSync(cfg, 'listen: here\nservers:\n  x: { command: node, colour: blue }\n');
    const r = await exec(process.execPath, [BIN, 'serve', '-c', cfg], { env: testEnv(home) }).catch((e) => e);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /toolgate: invalid configuration .*bad\.yaml:1:9: \/listen/);
  });
});
