// Issue 26 item 4: a stateless fleet. Three `toolgate serve` instances on one redis-server behind
// Debian's nginx running docs/examples/nginx-round-robin.conf as written (only its addresses and
// port replaced): plain round-robin, no affinity. One SDK v2 client pinned to 2026-07-28, with a
// grant token, talks to nginx only; the test shows its requests really reach all three instances
// (nginx's access log, each instance's own audit rows) and that limits, approvals, pins (also a
// silent change on an upstream the instances share), the kill switch, input_required rounds and
// tasks hold across them. Through docs/examples/nginx-hash.conf a 2025 client (SDK v1,
// Mcp-Session-Id) keeps its sessions and a 2026-07-28 one is still spread.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cli, until } from './helpers/approvals.js';
import { modernHttp } from './helpers/modern.js';
import { MODERN, MODERN_TASKS, ModernHttpFixture, ran } from './helpers/modern-upstream.js';
import { PHASE_HEADER, TestNginx } from './helpers/nginx.js';
import { TestRedis } from './helpers/redis.js';
import { serveListening, type Listening } from './helpers/serve.js';
import { denialText, ROOT, tempDir, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'fleet-rr-admin-token-0123456789';

const NOTES_POLICY = {
  version: '1', default: 'deny', pins: { on_change: 'block' },
  tools: {
    read_note: {},
    regional_lookup: {},
    write_note: { limits: [{ counter: 'writes', window: 'hour', max: 10, scope: 'grant' }] },
    run_command: { action: 'approve', approval: { via: ['api', 'cli'], timeout: '5m' } },
    delete_file: { action: 'approve', approval: { via: ['client'], timeout: '5m' } },
    confirm_delete: {},
  },
};
const TASKS_POLICY = {
  version: '1', default: 'deny',
  tools: {
    research: { limits: [{ counter: 'research', window: 'day', max: 1, scope: 'grant' }], deny_if: [{ conditions: [{ path: 'args.depth', op: 'gt', value: 3 }], on_deny: 'Too deep.' }] },
  },
};
const TASKS_ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'raw-tasks', version: '1' },
};

describe('three toolgate serve instances on one Redis behind nginx round-robin (docs/examples/nginx-round-robin.conf)', () => {
  let redis: TestRedis;
  let tasksUpstream: ModernHttpFixture;
  /** The upstream every instance shares over HTTP (honest when pinned; SIGUSR2 pulls the rug). */
  let liveUpstream: ModernHttpFixture;
  let liveRecord: string;
  let live: Client;
  let fleet: Listening[];
  let nginx: TestNginx;
  let client: Client;
  let record: string;
  const tokens: Record<string, string> = {};
  const elicited: string[] = [];
  /** The step under way: every request of the client and of raw() carries it, and nginx logs it. */
  let phase = 'setup';

  before(async () => {
    redis = await TestRedis.start();
    tasksUpstream = new ModernHttpFixture({}, MODERN_TASKS);
    const dir = tempDir();
    record = join(dir, 'runs.jsonl');
    liveRecord = join(dir, 'live.jsonl');
    liveUpstream = new ModernHttpFixture({ MODERN_ONLY: '1', RECORD_FILE: liveRecord });
    const state = `${redis.url}/0?prefix=rr&timeout=2s`;
    // Pinned as the server starts (read_note honest); the fleet then runs its rug-pull variant.
    const pinned = await cli(tempDir(), ['pin', '--json', '--state', state, '--', process.execPath, MODERN], { MODERN_ONLY: '1' });
    assert.equal(pinned.code, 0, pinned.stderr);
    const livePinned = await cli(tempDir(), ['pin', '--json', '--state', state, '--upstream', await liveUpstream.url]);
    assert.equal(livePinned.code, 0, livePinned.stderr);
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state, admin: { token: ADMIN },
      allowed_hosts: ['127.0.0.1'], trusted_proxies: ['127.0.0.1'],
      servers: {
        notes: { command: process.execPath, args: [MODERN], env: { MODERN_ONLY: '1', FIXTURE_VARIANT: 'rugpull', RECORD_FILE: record }, auth: 'grants', policy: writePolicy(dir, NOTES_POLICY) },
        research: { url: await tasksUpstream.url, auth: 'grants', policy: writePolicy(dir, TASKS_POLICY, 'tasks.json') },
        live: { url: await liveUpstream.url, auth: 'grants', policy: writePolicy(dir, { ...NOTES_POLICY, tools: { ...NOTES_POLICY.tools, add_tool: {} } }, 'live.json') },
      },
    }));
    fleet = await Promise.all([0, 1, 2].map(() => serveListening(config, tempDir())));
    nginx = await TestNginx.start('nginx-round-robin.conf', fleet.map((i) => new URL(i.base).host));
    for (const server of ['notes', 'research', 'live']) {
      const created = await admin(fleet[0], 'POST', '/api/grants', { server, label: `agent-${server}` });
      assert.equal(created.status, 201);
      tokens[server] = created.json.token as string;
    }
    client = await connect('notes');
    live = await connect('live');
    // A person answers in the client: toolgate's own question (a held call) and the upstream's (confirm_delete).
    client.setRequestHandler('elicitation/create' as never, (async (req: { params: { message: string } }) => {
      elicited.push(req.params.message);
      return /holding a call/.test(req.params.message) ? { action: 'accept', content: { decision: 'approve' } } : { action: 'accept', content: { confirm: true } };
    }) as never);
  });

  after(async () => {
    await client?.close().catch(() => {});
    await live?.close().catch(() => {});
    await nginx?.stop();
    await Promise.all((fleet ?? []).map((i) => i.stop()));
    await tasksUpstream?.stop();
    await liveUpstream?.stop();
    await redis?.stop();
  });

  async function admin(at: Listening, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${at.base}${path}`, {
      method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  /** Each instance's own audit rows for `tool` (its own audit log, through its admin API). */
  const rowsOf = async (tool: string) => Promise.all(fleet.map(async (i) => (await admin(i, 'GET', `/api/audit?tool=${tool}&limit=1000`)).json as any[]));
  /** The `count` requests for `mcpMethod` of this phase, as nginx logged them (in the order they ended). */
  const served = async (mcpMethod: string, count: number) => nginx.servedAfter(0, count, (s) => s.phase === phase && s.mcpMethod === mcpMethod);
  /** The instances (host:port) nginx sent this phase's `count` requests for `mcpMethod` to. */
  const servedBy = async (mcpMethod: string, count: number) => {
    const got = await served(mcpMethod, count);
    assert.equal(got.length, count, `${mcpMethod} requests in nginx's log: ${JSON.stringify(got)}`);
    return new Set(got.map((s) => s.upstream));
  };
  /** An SDK v2 client pinned to 2026-07-28 on nginx, with the grant of `server`; its requests carry the phase. */
  async function connect(server: string, options: object = {}): Promise<Client> {
    const phased: typeof fetch = (url, init) => fetch(url, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), [PHASE_HEADER]: phase } });
    const c = new Client({ name: 'fleet-rr', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } }, ...options });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${nginx.url}/mcp/${server}`), { requestInit: { headers: { authorization: `Bearer ${tokens[server]}` } }, fetch: phased }));
    return c;
  }
  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, { timeout: 60_000 });

  it('a limit of 10 per hour: 30 calls spread over all three instances, exactly 10 reach the upstream, 20 are refused by the limit', async () => {
    phase = 'limits';
    const results = await Promise.all(Array.from({ length: 30 }, (_, n) => call('write_note', { name: `n${n}`, text: 't' })));
    const denied = results.map(denialText).filter((t): t is string => t !== undefined);
    assert.equal(denied.length, 20, JSON.stringify([...new Set(denied)]));
    assert.ok(denied.every((t) => /Limit reached: 10 calls per hour \("writes", per grant\)/.test(t)), denied[0]);
    assert.equal(ran(record).filter((r) => r.tool === 'write_note').length, 10, 'runs at the upstream');
    assert.equal((await servedBy('tools/call', 30)).size, 3, 'nginx sent the calls to all three instances');
    // Each instance decided some of them (its own audit log), and together they allowed exactly 10.
    const rows = await rowsOf('write_note');
    assert.deepEqual(rows.map((r) => r.length > 0), [true, true, true], 'every instance has rows');
    assert.equal(new Set(rows.flatMap((r) => r.map((x) => x.instance))).size, 3, 'three instance names');
    assert.equal(rows.flat().filter((r) => r.kind === 'call').length, 30);
    assert.equal(rows.flat().filter((r) => r.kind === 'call' && r.decision === 'allow').length, 10);
  });

  /** The pending approval of the call to `tool` with these args, and the instance holding it. */
  async function held(tool: string, marker: string): Promise<{ id: string; holder: number }> {
    const pending = await until(async () => ((await admin(fleet[0], 'GET', '/api/approvals?status=pending')).json as any[])
      .find((a) => a.tool === tool && JSON.stringify(a.args).includes(marker)), `the held ${tool} call`);
    const rows = await rowsOf(tool);
    const holder = rows.findIndex((r) => r.some((x) => x.session === pending.session));
    assert.ok(holder >= 0, `the holding instance's audit names session ${pending.session}: ${JSON.stringify(rows)}`);
    return { id: pending.id, holder };
  }

  it('a held call is approved through the admin API of another instance and completes for the client; a denied one is denied', async () => {
    phase = 'approvals';
    const approved = call('run_command', { command: 'ls approve-me' });
    const a = await held('run_command', 'approve-me');
    assert.equal(ran(record).filter((r) => r.tool === 'run_command').length, 0, 'held, not forwarded');
    assert.equal((await admin(fleet[(a.holder + 1) % 3], 'POST', `/api/approvals/${a.id}/approve`, {})).status, 200);
    assert.deepEqual((await approved).content, [{ type: 'text', text: 'run_command done' }]);
    assert.equal((await admin(fleet[(a.holder + 2) % 3], 'POST', `/api/approvals/${a.id}/approve`, {})).status, 409, 'decided once, fleet-wide');

    const refused = call('run_command', { command: 'rm deny-me' });
    const d = await held('run_command', 'deny-me');
    assert.equal((await admin(fleet[(d.holder + 2) % 3], 'POST', `/api/approvals/${d.id}/deny`, { reason: 'not today' })).status, 200);
    assert.match(denialText(await refused) ?? '', /denied/i);
    assert.deepEqual(ran(record).filter((r) => r.tool === 'run_command').map((r) => r.args.command), ['ls approve-me'], 'only the approved call ran');
  });

  it('a rug pull (read_note changed since it was pinned) is caught by whichever instance lists or is called', async () => {
    phase = 'pins';
    for (let n = 0; n < 3; n++) {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('read_note') && names.includes('regional_lookup'), names.join());
    }
    for (let n = 0; n < 3; n++) {
      const r = await call('read_note', { name: 'a' });
      assert.match(denialText(r) ?? '', /POLICY DENIED/);
      assert.equal((r._meta as any)?.['dev.toolgate/decision']?.rule, '(pin)');
    }
    assert.equal((await servedBy('tools/list', 3)).size, 3, 'listed by all three instances');
    assert.equal((await servedBy('tools/call', 3)).size, 3, 'called through all three instances');
    assert.equal(ran(record).filter((r) => r.tool === 'read_note').length, 0, 'the changed tool never ran');
  });

  it('a silent rug pull on an upstream the fleet shares: once one instance lists the change, every instance refuses the tool', async () => {
    phase = 'live-pins';
    const readNote = () => live.callTool({ name: 'read_note', arguments: { name: 'a' } }, { timeout: 60_000 });
    // Every instance lists, and calls, the honest read_note first.
    for (let n = 0; n < 3; n++) assert.ok((await live.listTools()).tools.some((t) => t.name === 'read_note'));
    for (let n = 0; n < 3; n++) assert.equal(denialText(await readNote()), undefined);
    assert.equal((await servedBy('tools/call', 3)).size, 3);
    liveUpstream.child.kill('SIGUSR2');
    // One listing, through one instance, shows the change: that instance hides the tool.
    assert.ok(!(await live.listTools()).tools.some((t) => t.name === 'read_note'));
    // The others hear of it within a second (polled, not timed); then a call through each is refused.
    await until(async () => {
      const rules = [];
      for (let n = 0; n < 3; n++) rules.push((((await readNote())._meta as any)?.['dev.toolgate/decision'])?.rule);
      return rules.every((r) => r === '(pin)');
    }, 'three calls in a row (one per instance) refused by the pins', 10_000);
  });

  it('a subscriptions/listen stream through nginx (unbuffered) hears a list change made through another instance', async () => {
    phase = 'listen';
    const lists: string[][] = [];
    const listener = await connect('live', { listChanged: { tools: { onChanged: (err: Error | null, tools: { name: string }[] | null) => { if (!err && tools) lists.push(tools.map((t) => t.name)); } } } });
    try {
      assert.ok(listener.autoOpenedSubscription, 'the listen subscription was acknowledged at connect');
      assert.equal(denialText(await live.callTool({ name: 'add_tool', arguments: {} })), undefined);
      // The shared upstream tells every instance's own listen; the one holding the client's stream passes it on.
      const listed = await until(() => lists[0], 'the list change to reach the listen stream through nginx');
      assert.ok(listed.includes('add_tool') && !listed.includes('purge_notes'), `purge_notes is new since the pins: hidden (${listed.join()})`);
    } finally {
      await listener.close();
    }
    const [listen] = await served('subscriptions/listen', 1);
    const [added] = await served('tools/call', 1);
    assert.notEqual(listen?.upstream, added?.upstream, 'the stream and the change went through different instances');
  });

  it('the kill switch turned on at one instance stops calls through nginx (up to a second later at the others), and off again', async () => {
    phase = 'kill-switch';
    assert.equal(denialText(await call('regional_lookup', { region: 'eu', query: 'q' })), undefined);
    assert.equal((await admin(fleet[1], 'POST', '/api/kill-switch', { on: true, server: 'notes', reason: 'drill' })).status, 200);
    const lookup = async () => denialText(await call('regional_lookup', { region: 'eu', query: 'q' }));
    // The product contract is "at once here, within a second elsewhere": polled, never timed.
    await until(async () => {
      const texts = [await lookup(), await lookup(), await lookup()];
      return texts.every((t) => /kill switch is on/.test(t ?? ''));
    }, 'three calls in a row (one per instance) refused by the kill switch', 10_000);
    assert.equal((await admin(fleet[2], 'POST', '/api/kill-switch', { on: false, server: 'notes' })).status, 200);
    await until(async () => [await lookup(), await lookup(), await lookup()].every((t) => t === undefined), 'calls through every instance again', 10_000);
  });

  it('input_required rounds: a held call approved in the client, and an upstream\'s own question, each retried on another instance', async () => {
    phase = 'input-required';
    const before = elicited.length;
    const approved = await call('delete_file', { path: '/tmp/rr' });
    assert.deepEqual(approved.content, [{ type: 'text', text: 'delete_file done' }], JSON.stringify(approved));
    const confirmed = await call('confirm_delete', { path: '/tmp/rr2' });
    assert.deepEqual(confirmed.content, [{ type: 'text', text: 'confirm_delete done' }], JSON.stringify(confirmed));
    assert.equal(elicited.length - before, 2, 'the person was asked once for each');
    // Each call was a first POST and a retry: four tools/call requests, on successive instances.
    const calls = await served('tools/call', 4);
    assert.equal(calls.length, 4, JSON.stringify(calls));
    assert.notEqual(calls[0].upstream, calls[1].upstream, 'the approval\'s retry reached another instance');
    assert.notEqual(calls[2].upstream, calls[3].upstream, 'the upstream round\'s retry reached another instance');
    assert.deepEqual(ran(record).filter((r) => r.tool === 'delete_file' || r.tool === 'confirm_delete').map((r) => r.tool), ['delete_file', 'confirm_delete'], 'each ran once');
  });

  /** A raw 2026-07-28 POST to nginx for the research server; the JSON-RPC answer. */
  async function raw(id: number, method: string, params: Record<string, unknown>): Promise<any> {
    const res = await fetch(`${nginx.url}/mcp/research`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${tokens.research}`, [PHASE_HEADER]: phase,
        'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': (params.name ?? params.taskId) as string,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: TASKS_ENVELOPE } }),
    });
    const text = await res.text();
    return JSON.parse(res.headers.get('content-type')?.startsWith('text/event-stream') ? /^data: (.*)$/m.exec(text)![1] : text);
  }

  it('a task created through one instance is polled, updated (its input judged) and read through the others', async () => {
    phase = 'tasks';
    const created = await raw(1, 'tools/call', { name: 'research', arguments: { topic: 'tides' } });
    assert.equal(created.result?.resultType, 'task', JSON.stringify(created));
    const taskId = created.result.taskId as string;
    const waiting = await raw(2, 'tasks/get', { taskId });
    assert.equal(waiting.result?.status, 'input_required', JSON.stringify(waiting));
    const tooDeep = await raw(3, 'tasks/update', { taskId, inputResponses: { depth: { action: 'accept', content: { depth: 9 } } } });
    assert.match(tooDeep.error?.message ?? '', /\[POLICY DENIED\] Too deep/, JSON.stringify(tooDeep));
    assert.equal((await raw(4, 'tasks/update', { taskId, inputResponses: { depth: { action: 'accept', content: { depth: 2 } } } })).error, undefined);
    const done = await raw(5, 'tasks/get', { taskId });
    assert.equal(done.result?.status, 'completed', JSON.stringify(done));
    assert.deepEqual(done.result.result, { content: [{ type: 'text', text: 'report on tides, depth 2' }] });
    const by = (await nginx.servedAfter(0, 5, (s) => s.phase === 'tasks')).map((s) => s.upstream);
    assert.equal(by.length, 5);
    assert.equal(new Set(by).size, 3, 'the task\'s requests reached all three instances');
    // The call's row is in the creating instance's audit log; the end, seen through another, reaches it.
    assert.notEqual(by[4], by[0], 'the end was seen through another instance than the one that created the task');
    await until(async () => {
      const allowed = (await rowsOf('research')).flat().filter((r) => r.decision === 'allow');
      assert.equal(allowed.length, 1, 'one row for the call, fleet-wide');
      return allowed[0].outcome === 'task_completed';
    }, 'the task\'s row (in the creating instance\'s log) to get its end');
    // The call was charged once (a limit of 1 a day): a second research call is refused.
    assert.match(JSON.stringify((await raw(6, 'tools/call', { name: 'research', arguments: { topic: 'waves' } })).result), /Limit reached: 1 call per day/);
  });
});

describe('a mixed fleet behind docs/examples/nginx-hash.conf', () => {
  // Before, the documented config hashed on Mcp-Session-Id: the initialize (no id yet) went
  // round-robin and the session's later requests to whichever instance its id hashed to, so two
  // sessions in three got 404 "Session not found" at their first notification.
  it('a 2025 client (SDK v1, Mcp-Session-Id) keeps its sessions on their instance; a 2026-07-28 client is still spread', async () => {
    const redis = await TestRedis.start();
    const dir = tempDir();
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: `${redis.url}/0?prefix=hash&timeout=2s`, allowed_hosts: ['127.0.0.1'],
      servers: { notes: { command: process.execPath, args: [MODERN], auth: 'none', policy: writePolicy(dir, { version: '1', default: 'allow' }) } },
    }));
    const fleet = await Promise.all([0, 1, 2].map(() => serveListening(config, tempDir())));
    const nginx = await TestNginx.start('nginx-hash.conf', fleet.map((i) => new URL(i.base).host));
    const clients: LegacyClient[] = [];
    let modern: Client | undefined;
    const lookup = { name: 'regional_lookup', arguments: { region: 'eu', query: 'q' } };
    const done = [{ type: 'text', text: 'regional_lookup done' }];
    try {
      for (let n = 0; n < 3; n++) {
        const c = new LegacyClient({ name: 'legacy-rr', version: '1' });
        await c.connect(new LegacyTransport(new URL(`${nginx.url}/mcp/notes`)));
        clients.push(c);
      }
      for (let round = 0; round < 3; round++) {
        for (const c of clients) assert.deepEqual((await c.callTool(lookup)).content, done);
      }
      const served = nginx.served().filter((s) => s.session !== '');
      const bySession = new Map<string, Set<string>>();
      for (const s of served) bySession.set(s.session, (bySession.get(s.session) ?? new Set()).add(s.upstream));
      assert.equal(bySession.size, 3, 'three sessions');
      assert.ok([...bySession.values()].every((u) => u.size === 1), 'each session\'s requests all reached one instance');
      assert.ok(served.every((s) => s.status < 400), JSON.stringify(served.filter((s) => s.status >= 400)));

      const mark = nginx.served().length;
      modern = await modernHttp('pinned', `${nginx.url}/mcp/notes`);
      for (let n = 0; n < 6; n++) assert.deepEqual((await modern.callTool(lookup)).content, done);
      const calls = await nginx.servedAfter(mark, 6, (s) => s.mcpMethod === 'tools/call');
      assert.equal(new Set(calls.map((s) => s.upstream)).size, 3, `the modern client's calls reached all three instances: ${JSON.stringify(calls)}`);
    } finally {
      await modern?.close().catch(() => {});
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await nginx.stop();
      await Promise.all(fleet.map((i) => i.stop()));
      await redis.stop();
    }
  });
});

describe('the nginx configuration the docs show', () => {
  it('every line of every nginx block in docs/gateway.md and docs/operations.md is a line of a tested file in docs/examples', () => {
    const lines = (text: string) => text.split('\n').map((l) => l.trim()).filter(Boolean);
    const tested = new Set(['nginx-round-robin.conf', 'nginx-hash.conf'].flatMap((f) => lines(readFileSync(join(ROOT, 'docs/examples', f), 'utf8'))));
    for (const doc of ['docs/gateway.md', 'docs/operations.md']) {
      const blocks = [...readFileSync(join(ROOT, doc), 'utf8').matchAll(/```nginx\n([\s\S]*?)```/g)].map((m) => m[1]);
      assert.ok(blocks.length > 0, doc);
      for (const line of blocks.flatMap(lines)) assert.ok(tested.has(line), `${doc}: "${line}" is in no file the fleet test runs`);
    }
  });
});
