import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway, keptSessions } from '../src/gateway/server.js';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { PolicySession } from '../src/proxy/session.js';
import { openMemoryState } from '../src/state/memory.js';
import { openState } from '../src/state/index.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { TestRedis } from './helpers/redis.js';
import { cli, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

function statusWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', headers: { host } }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('error', reject);
    req.end();
  });
}

describe('allowed_hosts on a configuration reload', () => {
  it('a name added while the gateway runs is accepted at once (nginx passes it as Host), and one removed is refused', async () => {
    // A new user put nginx in front (Host: 127.0.0.1, no port), added the name to allowed_hosts,
    // saw "configuration reloaded", and every request still got 403 until a restart.
    const dir = tempDir();
    const state = openSqliteState(join(dir, 's.db'));
    const audit = new AuditLog(join(dir, 'a.db'));
    const config = (hosts: string[]) => GatewayConfigSchema.parse({ listen: '127.0.0.1:0', allowed_hosts: hosts, servers: { x: { command: 'true' } } });
    const gw = new Gateway({ config: config([]), state, audit, log: pino({ level: 'silent' }) });
    try {
      const { port } = await gw.start();
      await gw.ready;
      assert.equal(await statusWithHost(port, `127.0.0.1:${port}`), 200);
      assert.equal(await statusWithHost(port, 'mcp.example.com'), 403);
      gw.setConfig(config(['mcp.example.com']));
      assert.equal(await statusWithHost(port, 'mcp.example.com'), 200);
      assert.equal(await statusWithHost(port, `mcp.example.com:${port}`), 200);
      gw.setConfig(config([]));
      assert.equal(await statusWithHost(port, 'mcp.example.com'), 403, 'a name removed is refused again');
    } finally {
      await gw.stop();
      audit.close();
      await state.close();
    }
  });
});

/** What a new operator trying pooling and the fleet (issue 26) tripped on, from the CLI. */
describe('policy validate on a toolgate.yaml', () => {
  const config = (dir: string, server: string[]) => {
    const file = join(dir, 'toolgate.yaml');
    writeFileSync(file, ['listen: 127.0.0.1:18699', 'state: sqlite:./state.db', 'admin: { token: "${ADMIN_TOKEN}" }', 'servers:', '  everything:', '    command: node', ...server, ''].join('\n'));
    return file;
  };
  const env = (dir: string) => testEnv(dir, { ADMIN_TOKEN: 'admin-token-for-pool-first-use-01' });

  it('checks it as serve -c loads it, not as a policy ("unknown field servers")', async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'deny', tools: { echo: {} } });
    const good = await cli(['policy', 'validate', config(dir, [`    policy: ${JSON.stringify(policy)}`, '    pool: {max: 2, queue_timeout: 2s}'])], env(dir));
    assert.equal(good.code, 0, good.stdout + good.stderr);
    assert.match(good.stdout, /toolgate\.yaml: a gateway configuration \(toolgate serve -c\), valid: 1 server\(s\) \(everything\)/);
    assert.doesNotMatch(good.stdout, /unknown field/);

    const bad = await cli(['policy', 'validate', config(dir, ['    pool: {max: 1, queue_timeout: 2}'])], env(dir));
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /toolgate\.yaml:7:\d+: \/servers\/everything\/pool\/queue_timeout: a duration such as 90s, 15m or 1h/);
    assert.doesNotMatch(bad.stdout, /unknown field|a server needs either/);
  });

  it('checks the policy files the configuration names, and says which file is wrong', async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'maybe', tools: {} });
    const r = await cli(['policy', 'validate', '--json', config(dir, [`    policy: ${JSON.stringify(policy)}`])], env(dir));
    assert.equal(r.code, 1);
    const [report] = JSON.parse(r.stdout) as [{ kind: string; valid: boolean; errors: { file: string; pointer: string; message: string }[] }];
    assert.equal(report.kind, 'gateway-config');
    assert.equal(report.valid, false);
    assert.deepEqual(report.errors.map((e) => [e.file, e.pointer]), [[policy, '/default']]);
    assert.match(report.errors[0].message, /^\(server everything\) /);
  });

  it('a policy file is still validated as a policy', async () => {
    const dir = tempDir();
    const r = await cli(['policy', 'validate', writePolicy(dir, { version: '1', default: 'deny', tools: { servers: {} } })], env(dir));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /valid \(1 tool entries, default deny/);
  });
});

describe('a reload that changes a pooled server', () => {
  it('names the servers whose open sessions keep their old upstream and pool (pool.max 8 -> 1 changed nothing for a new user)', () => {
    const config = (max: number, extra: object = {}) => GatewayConfigSchema.parse({ servers: { everything: { command: 'node', pool: { max } }, other: { command: 'node', ...extra } } });
    const open = [{ server: 'everything' }, { server: 'everything' }, { server: 'other' }];
    assert.deepEqual(keptSessions(config(8), config(1), open), [{ server: 'everything', sessions: 2 }]);
    assert.deepEqual(keptSessions(config(8), config(8), open), [], 'nothing changed: nothing to say');
    assert.deepEqual(keptSessions(config(8), config(1), [{ server: 'other' }]), [], 'a changed server without open sessions: nothing kept');
    assert.deepEqual(keptSessions(config(8), config(8, { call_timeout: '1m' }), open), [{ server: 'other', sessions: 1 }]);
  });
});

describe('toolgate status with a fleet', () => {
  it('says the instance and call lines come from one audit log, not "no toolgate run or serve is running" under three live instances', async () => {
    const redis = await TestRedis.start();
    const dir = tempDir();
    try {
      const state = openState(`${redis.url}/0?prefix=st`);
      await state.connect?.();
      await state.fleet!.announce({ instance: 'vm:1', listen: 'http://127.0.0.1:1', servers: ['everything'], sessions: 1, startedAt: new Date().toISOString() });
      await state.close();
      const audit = new AuditLog(join(dir, 'audit.db'));
      audit.close();
      const r = await cli(['status', '--state', `${redis.url}/0?prefix=st`, '--audit', join(dir, 'audit.db')], testEnv(dir));
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^fleet: 1 live instance on the shared state\n/);
      assert.match(r.stdout, /^ {2}vm:1 {2}http:\/\/127\.0\.0\.1:1 {2}everything {2}1 session, up since /m, 'one session, not "1 sessions"');
      assert.ok(r.stdout.includes(`no toolgate run or serve is running writing to ${join(dir, 'audit.db')}\n`), r.stdout);
      assert.ok(r.stdout.includes(`calls in the last minute (in ${join(dir, 'audit.db')}; each instance keeps its own audit log):`), r.stdout);
    } finally {
      await redis.stop();
    }
  });
});

describe('toolgate lists a server\'s tools one listing at a time', () => {
  it('list_changed during a listing lists again once it ends, never two at once (each took a pooled upstream process)', async () => {
    // server-everything announces list_changed as it starts: a new user's first request of a grant
    // started three server-everything processes, one per concurrent tools/list of toolgate's own.
    const r = validatePolicyObject({ version: '1', default: 'allow' });
    assert.ok(r.ok);
    const state = openMemoryState();
    const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: state.counters });
    const toServer: Json[] = [];
    const s = new PolicySession({ engine, identity: { sessionId: 's', serverName: 'x', grant: { label: 'g', tags: [] } }, log: pino({ level: 'silent' }), toClient: () => {}, toServer: (m) => toServer.push(m) });
    s.fromClient({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    s.fromServer({ jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-06-18', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'x', version: '1' } } });
    await s.fromClient({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const tick = () => new Promise((r) => setImmediate(r));
    const lists = () => toServer.filter((m) => m.method === 'tools/list');
    await tick();
    assert.equal(lists().length, 1, 'the listing after initialize');
    s.fromServer({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    s.fromServer({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    await tick();
    assert.equal(lists().length, 1, 'no second listing while the first is unanswered');
    s.fromServer({ jsonrpc: '2.0', id: lists()[0].id as string, result: { tools: [{ name: 'a', inputSchema: { type: 'object' } }] } });
    for (let i = 0; i < 5 && lists().length < 2; i++) await tick();
    assert.equal(lists().length, 2, 'one more listing for the changes announced meanwhile (both of them)');
    s.fromServer({ jsonrpc: '2.0', id: lists()[1].id as string, result: { tools: [{ name: 'a', inputSchema: { type: 'object' } }, { name: 'b', inputSchema: { type: 'object' } }] } });
    for (let i = 0; i < 5; i++) await tick();
    assert.equal(lists().length, 2, 'and no more');
  });
});
