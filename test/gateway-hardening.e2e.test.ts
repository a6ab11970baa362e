// Issue 9 (hardening) findings on `toolgate serve`, each through the real CLI with a config file.
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AuditLog } from '../src/audit/index.js';
import { BIN, FIXTURES, LENIENT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);
const TINY = join(FIXTURES, 'tiny-server.py');
const ADMIN = 'admin-token-for-hardening-tests-0123';
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hardening', version: '1' } } };
const dirs: string[] = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

function home(): string {
  const d = tempDir('toolgate-hardening-');
  dirs.push(d);
  return d;
}

interface Serve {
  base: string;
  port: number;
  dir: string;
  config: string;
  child: ChildProcess;
  log: () => string;
  stop: () => Promise<number | null>;
}

/** `toolgate serve -c` on a JSON config in its own home; `ulimit` runs it under that many file descriptors. */
async function serve(config: object, opts: { dir?: string; ulimit?: number } = {}): Promise<Serve> {
  const dir = opts.dir ?? home();
  const file = join(dir, 'toolgate.json');
  writeFileSync(file, JSON.stringify({ listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db', ...config }));
  const env = testEnv(dir, { TOOLGATE_LOG_LEVEL: 'info' });
  const child = opts.ulimit
    ? spawn('bash', ['-c', `ulimit -n ${opts.ulimit}; exec "$0" "$@"`, process.execPath, BIN, 'serve', '-c', file], { env })
    : spawn(process.execPath, [BIN, 'serve', '-c', file], { env });
  let log = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      log += d;
      const m = /"listen":"(http:\/\/[^"]+)"/.exec(log);
      if (m) resolve(m[1]);
    });
    child.stdout!.on('data', (d) => { log += d; });
    void exited.then(() => reject(new Error(`serve exited: ${log}`)));
  });
  return {
    base, port: Number(new URL(base).port), dir, config: file, child, log: () => log,
    stop: () => { child.kill('SIGTERM'); return exited; },
  };
}

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function initialize(base: string, server: string, headers: Record<string, string> = {}) {
  const r = await post(base, `/mcp/${server}`, INIT, headers);
  return { ...r, sid: r.headers.get('mcp-session-id') ?? '' };
}

const call = (id: string, name: string, args: object = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

async function grant(s: Serve, label: string): Promise<string> {
  const { stdout } = await exec(process.execPath, [BIN, 'grants', 'create', '-c', s.config, '--server', 'lenient', '--label', label, '--json'], { env: testEnv(s.dir) });
  return (JSON.parse(stdout) as { token: string }).token;
}

/** Polls until `check` holds (bounded), for what happens in another process. */
async function eventually(check: () => boolean | Promise<boolean>, tries = 200): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** A process that ran and is gone (or a zombie nobody reaped yet). */
function gone(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

function rawRequest(port: number, path: string, headers: Record<string, string>, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: body === undefined ? 'GET' : 'POST', headers }, (res) => { res.resume(); resolve(res.statusCode!); });
    req.on('error', reject);
    req.end(body);
  });
}

describe('toolgate serve: hardening (issue 9)', () => {
  it('5: sessions.max_per_grant and sessions.max close the least recently used idle session, else refuse with 429 / 503 and Retry-After', async () => {
    const dir = home();
    const s = await serve({
      sessions: { max: 3, max_per_grant: 2 },
      servers: { lenient: { command: process.execPath, args: [LENIENT], env: { LENIENT_LOG: join(dir, 'lenient.log') }, policy: writePolicy(dir, { version: '1', default: 'allow' }) } },
    }, { dir });
    const seen = () => { try { return readFileSync(join(dir, 'lenient.log'), 'utf8'); } catch { return ''; } };
    const aborts: AbortController[] = [];
    /** A call that never answers keeps its session busy until its client hangs up. */
    const busy = async (sid: string, auth: Record<string, string>, id: string) => {
      const abort = new AbortController();
      aborts.push(abort);
      fetch(`${s.base}/mcp/lenient`, { method: 'POST', headers: { ...JSON_HEADERS, ...auth, 'mcp-session-id': sid }, body: JSON.stringify(call(id, 'hang')), signal: abort.signal }).catch(() => {});
      assert.ok(await eventually(() => seen().includes(`"${id}"`)), `${id} reached the server`);
      return abort;
    };
    try {
      const a = { authorization: `Bearer ${await grant(s, 'a')}` };
      const b = { authorization: `Bearer ${await grant(s, 'b')}` };
      const a1 = await initialize(s.base, 'lenient', a);
      const a2 = await initialize(s.base, 'lenient', a);
      assert.equal(a1.status, 200);
      assert.equal(a2.status, 200);
      const a1Call = await busy(a1.sid, a, 'a1-hang');
      await busy(a2.sid, a, 'a2-hang');
      const a3 = await initialize(s.base, 'lenient', a);
      assert.equal(a3.status, 429, a3.text);
      assert.ok(Number(a3.headers.get('retry-after')) > 0);
      assert.match(JSON.parse(a3.text).error.message, /sessions\.max_per_grant/);

      const b1 = await initialize(s.base, 'lenient', b);
      assert.equal(b1.status, 200);
      await busy(b1.sid, b, 'b1-hang');
      const b2 = await initialize(s.base, 'lenient', b);
      assert.equal(b2.status, 503, 'the server is full and nothing in it is idle');
      assert.ok(Number(b2.headers.get('retry-after')) > 0);
      assert.match(JSON.parse(b2.text).error.message, /sessions\.max/);

      // a1's call ends (its client hangs up): a1 is now the grant's idle session, closed for the new one.
      a1Call.abort();
      assert.ok(await eventually(() => seen().includes('notifications/cancelled')));
      const a4 = await initialize(s.base, 'lenient', a);
      assert.equal(a4.status, 200, a4.text);
      assert.equal((await post(s.base, '/mcp/lenient', call('x', 'echo'), { ...a, 'mcp-session-id': a1.sid })).status, 404, 'the evicted session is gone');
      assert.equal((await post(s.base, '/mcp/lenient', call('y', 'echo'), { ...a, 'mcp-session-id': a4.sid })).status, 200);
    } finally {
      for (const abort of aborts) abort.abort();
      await s.stop();
    }
  });

  it('5: a spawn that fails with EMFILE gives that session a clear 503 and the gateway keeps serving (ulimit -n 200)', async () => {
    // 300 sessions are more than 200 descriptors can hold (the caps would otherwise evict first); nothing is reaped on a slow machine.
    // (Node itself needs well over 100 descriptors to load the gateway's modules.)
    const s = await serve({ sessions: { max: 300, max_per_grant: 300, idle_timeout: '1h', idle_timeout_unused: '1h' }, servers: { tiny: { command: 'python3', args: [TINY], auth: 'none' } } }, { ulimit: 200 });
    try {
      const open: string[] = [];
      let refused: Awaited<ReturnType<typeof initialize>> | undefined;
      for (let i = 0; i < 300 && !refused; i++) {
        const r = await initialize(s.base, 'tiny');
        if (r.status === 200) open.push(r.sid);
        else refused = r;
      }
      assert.ok(refused, 'file descriptors ran out before 300 sessions');
      assert.equal(refused.status, 503, refused.text);
      assert.match(JSON.parse(refused.text).error.message, /cannot start the server "tiny": too many open files \(EMFILE\)/);
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      assert.equal((await fetch(`${s.base}/healthz`)).status, 200);
      for (const sid of open.splice(0, 10)) assert.equal((await fetch(`${s.base}/mcp/tiny`, { method: 'DELETE', headers: { 'mcp-session-id': sid } })).status, 200);
      // The ended sessions' children exit and give their descriptors back: new sessions work again.
      let again = 0;
      assert.ok(await eventually(async () => { again = (await initialize(s.base, 'tiny')).status; return again === 200; }), `after freeing sessions: ${again}`);
      assert.equal((await post(s.base, '/mcp/tiny', call('e', 'echo'), { 'mcp-session-id': open[0] })).status, 200, 'sessions opened before still work');
      assert.doesNotMatch(s.log(), /TypeError/);
    } finally {
      await s.stop();
    }
  });

  it('6, 7: failed tokens are throttled per address, valid ones never; admin guesses too; one audit row per address and minute', async () => {
    const s = await serve({ admin: { token: ADMIN }, servers: { lenient: { command: process.execPath, args: [LENIENT] } } });
    let stopped = false;
    try {
      const valid = await grant(s, 'valid');
      const statuses: number[] = [];
      for (let i = 0; i < 25; i++) statuses.push((await initialize(s.base, 'lenient', { authorization: `Bearer tg_wrong${i}` })).status);
      // 403: a gateway with static grants only refuses without an OAuth challenge (docs/oauth.md).
      assert.deepEqual(statuses, [...Array(20).fill(403), ...Array(5).fill(429)]);
      const ok = await initialize(s.base, 'lenient', { authorization: `Bearer ${valid}` });
      assert.equal(ok.status, 200, 'a valid token from a throttled address still works');
      assert.equal((await post(s.base, '/mcp/lenient', call('c', 'echo'), { authorization: `Bearer ${valid}`, 'mcp-session-id': ok.sid })).status, 200);

      const admin = (token: string) => fetch(`${s.base}/api/servers`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
      for (let i = 0; i < 30; i++) assert.equal(await admin(`guess-${i}`), 429, 'admin guesses from this address are throttled too');
      assert.equal(await admin(ADMIN), 200, 'the admin token still works');

      assert.equal(await s.stop(), 0);
      stopped = true;
      const audit = new AuditLog(join(s.dir, 'audit.db'));
      const rows = audit.query({ kind: 'auth', limit: 1000 });
      audit.close();
      assert.equal(rows.length, 2, `one row per address, target and minute: ${JSON.stringify(rows.map((r) => r.message))}`);
      assert.ok(rows.some((r) => /server lenient: 25 failed attempts from 127\.0\.0\.1/.test(String(r.message))));
      assert.ok(rows.some((r) => /admin API: 30 failed attempts from 127\.0\.0\.1/.test(String(r.message))));
    } finally {
      if (!stopped) await s.stop();
    }
  });

  it('10: malformed percent-encoding is 400; __proto__ and constructor are no servers', async () => {
    const s = await serve({ admin: { token: ADMIN }, servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none' } } });
    try {
      for (const path of ['/mcp/%E0%A4%A', '/mcp/%', '/sse/%']) {
        const r = await post(s.base, path, INIT);
        assert.equal(r.status, 400, path);
        assert.match(JSON.parse(r.text).error.message, /percent-encoding/);
      }
      for (const name of ['__proto__', 'constructor', 'hasOwnProperty', '%5F%5Fproto%5F%5F']) {
        assert.equal((await post(s.base, `/mcp/${name}`, INIT)).status, 404, name);
        assert.equal((await fetch(`${s.base}/sse/${name}`)).status, 404, name);
      }
      assert.equal((await fetch(`${s.base}/api/grants/%/rotate`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: '{}' })).status, 400);
    } finally {
      await s.stop();
    }
  });

  it('11: a grant that expires in 0s or less is refused (CLI and admin API)', async () => {
    const dir = home();
    for (const expires of ['0s', '0d', '-1h']) {
      const r = await exec(process.execPath, [BIN, 'grants', 'create', '--server', 'x', '--label', 'l', `--expires=${expires}`], { env: testEnv(dir) }).catch((e) => e);
      assert.equal(r.code, 2, expires);
      assert.match(r.stderr, /^toolgate: (--expires must be more than 0|invalid duration)/, expires);
    }
    const list = await exec(process.execPath, [BIN, 'grants', 'list', '--json'], { env: testEnv(dir) });
    assert.deepEqual(JSON.parse(list.stdout), [], 'no grant was made');
    const s = await serve({ admin: { token: ADMIN }, servers: { lenient: { command: process.execPath, args: [LENIENT] } } });
    try {
      const r = await fetch(`${s.base}/api/grants`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ server: 'lenient', label: 'l', expires: '0s' }) });
      assert.equal(r.status, 400);
    } finally {
      await s.stop();
    }
  });

  it('14: a child that ignores EOF and SIGTERM, and its own child, do not outlive the gateway', async () => {
    const dir = home();
    const pids = join(dir, 'pids');
    const s = await serve({ servers: { tiny: { command: 'python3', args: [TINY], auth: 'none', env: { TINY_STUBBORN: '1', TINY_PIDS: pids } } } }, { dir });
    const one = await initialize(s.base, 'tiny');
    const two = await initialize(s.base, 'tiny');
    assert.equal(one.status, 200);
    assert.equal(two.status, 200);
    // One session closes just before the gateway is told to stop.
    assert.equal((await fetch(`${s.base}/mcp/tiny`, { method: 'DELETE', headers: { 'mcp-session-id': one.sid } })).status, 200);
    assert.equal(await s.stop(), 0);
    const all = readFileSync(pids, 'utf8').trim().split(/\s+/).map(Number);
    assert.equal(all.length, 4, 'two children and two grandchildren ran');
    assert.ok(await eventually(() => all.every(gone), 20), `still running: ${all.filter((p) => !gone(p)).join(' ')}`);
  });

  it('15: allowed_hosts lets clients reach a gateway by other names and addresses; others are still refused', async () => {
    const s = await serve({ allowed_hosts: ['gw.example.test', '10.1.2.3:8443'], servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none' } } });
    try {
      const body = JSON.stringify(INIT);
      const status = (host: string, extra: Record<string, string> = {}) => rawRequest(s.port, '/mcp/lenient', { ...JSON_HEADERS, host, ...extra }, body);
      assert.equal(await status(`gw.example.test:${s.port}`), 200);
      assert.equal(await status('GW.example.test'), 200, 'without a port (behind a proxy), any case');
      assert.equal(await status('10.1.2.3:8443'), 200);
      assert.equal(await status(`gw.example.test:${s.port}`, { origin: `https://gw.example.test:${s.port}` }), 200);
      assert.equal(await status('10.1.2.3:9999'), 403, 'a listed address on another port');
      assert.equal(await status(`evil.example:${s.port}`), 403);
      assert.equal(await status(`gw.example.test:${s.port}`, { origin: 'https://evil.example' }), 403);
    } finally {
      await s.stop();
    }
  });

  it('16: a corrupt state.db or audit.db, or an unusable TOOLGATE_HOME, is one line naming the file, exit 2', async () => {
    const dir = home();
    writeFileSync(join(dir, 'state.db'), 'this is not a database '.repeat(50));
    for (const args of [['grants', 'list'], ['serve', '--listen', '127.0.0.1:0']]) {
      const r = await exec(process.execPath, [BIN, ...args], { env: testEnv(dir) }).catch((e) => e);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, new RegExp(`^toolgate: ${join(dir, 'state.db').replace(/[.]/g, '\\.')} is not a usable SQLite database .*: move it aside`));
      assert.doesNotMatch(r.stderr, /unexpected error/);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    }
    rmSync(join(dir, 'state.db'));
    writeFileSync(join(dir, 'audit.db'), 'this is not a database either '.repeat(50));
    const audit = await exec(process.execPath, [BIN, 'serve', '--listen', '127.0.0.1:0'], { env: testEnv(dir) }).catch((e) => e);
    assert.equal(audit.code, 2);
    assert.match(audit.stderr, /audit\.db is not a usable SQLite database/);
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    for (const args of [['grants', 'list'], ['serve', '--listen', '127.0.0.1:0']]) {
      const r = await exec(process.execPath, [BIN, ...args], { env: testEnv(join(file, 'home')) }).catch((e) => e);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.stderr, new RegExp(`^toolgate: cannot (open|use) ${file.replace(/[.]/g, '\\.')}/home.*(writable|TOOLGATE_HOME)`));
      assert.doesNotMatch(r.stderr, /unexpected error/);
    }
  });

  it('17: the Content-Type media type is parsed: a parameter that mentions JSON is 415', async () => {
    const s = await serve({ admin: { token: ADMIN }, servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none' } } });
    try {
      for (const type of ['text/plain; x=application/json', 'text/plain; x="application/json"', 'application/jsonx', 'application/json-seq', '']) {
        assert.equal((await initialize(s.base, 'lenient', { 'content-type': type })).status, 415, type);
      }
      assert.equal((await initialize(s.base, 'lenient', { 'content-type': 'Application/JSON; charset=utf-8' })).status, 200);
      const admin = await fetch(`${s.base}/api/kill-switch`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'text/plain; x=application/json' }, body: '{"on": true}' });
      assert.equal(admin.status, 415, 'admin API bodies too');
    } finally {
      await s.stop();
    }
  });

  it('18: an invalid policy edit keeps new sessions on the last good policy, logged and counted', async () => {
    const dir = home();
    const policy = writePolicy(dir, { version: '1', default: 'allow', tools: { delete_all: { action: 'deny', on_deny: 'Never.' } } });
    const s = await serve({ servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none', policy, env: { LENIENT_LOG: join(dir, 'lenient.log') } } } }, { dir });
    try {
      assert.equal((await initialize(s.base, 'lenient')).status, 200);
      writeFileSync(policy, '{ "version": "1", "default": "allow", "tools": { "delete_all": { "action": "maybe" } } }');
      const next = await initialize(s.base, 'lenient');
      assert.equal(next.status, 200, next.text);
      const denied = await post(s.base, '/mcp/lenient', call('d', 'delete_all'), { 'mcp-session-id': next.sid });
      assert.match(denied.text, /Never\./, 'the last good policy decides');
      assert.doesNotMatch(existsSync(join(dir, 'lenient.log')) ? readFileSync(join(dir, 'lenient.log'), 'utf8') : '', /"delete_all"/);
      assert.ok(await eventually(() => /policy reload rejected, keeping the previous policy/.test(s.log())));
      const metrics = await (await fetch(`${s.base}/metrics`)).text();
      assert.match(metrics, /toolgate_policy_rejected_total\{policy="[^"]*policy\.json"\} 1\b/, 'counted once');
    } finally {
      await s.stop();
    }
  });
});

describe('toolgate serve: sessions.idle_timeout_unused (issue 10, item 7)', () => {
  it('closes a session with no GET stream that sent nothing for idle_timeout_unused; one with a stream stays', async () => {
    const s = await serve({ sessions: { idle_timeout_unused: '1s' }, servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none' } } });
    const abort = new AbortController();
    try {
      const unused = await initialize(s.base, 'lenient');
      const streaming = await initialize(s.base, 'lenient');
      const stream = await fetch(`${s.base}/mcp/lenient`, { headers: { accept: 'text/event-stream', 'mcp-session-id': streaming.sid }, signal: abort.signal });
      assert.equal(stream.status, 200);
      assert.ok(await eventually(() => /session closed: unused/.test(s.log())), 'the unused session was closed');
      assert.equal((await post(s.base, '/mcp/lenient', call('u', 'echo'), { 'mcp-session-id': unused.sid })).status, 404);
      assert.equal((await post(s.base, '/mcp/lenient', call('s', 'echo'), { 'mcp-session-id': streaming.sid })).status, 200, 'the session with a GET stream stays');
    } finally {
      abort.abort();
      await s.stop();
    }
  });
});

describe('name-keyed lookups elsewhere (issue 9, finding 10)', () => {
  it('pins: a tool named after an Object.prototype property is not taken as pinned', async () => {
    const { PinGuard } = await import('../src/proxy/pins.js');
    const { openMemoryState } = await import('../src/state/memory.js');
    const { pino } = await import('pino');
    const state = openMemoryState();
    await state.pins.set('srv', { echo: 'fp' });
    const guard = new PinGuard(state.pins, 'srv', pino({ level: 'silent' }), { source: { kind: 'url', url: 'http://127.0.0.1:1/mcp' }, older: ['srv'] });
    await new Promise((r) => setImmediate(r));
    for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty']) assert.equal(guard.isChanged(name), true, `${name} was never pinned`);
  });
});

describe('an upstream that writes lines that are not JSON-RPC messages', () => {
  it('drops null, numbers, strings, arrays and broken JSON from the server, keeps the session and answers the call', async () => {
    const dir = home();
    const s = await serve({ servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none', policy: writePolicy(dir, { version: '1', default: 'allow' }) } } }, { dir });
    try {
      const { sid } = await initialize(s.base, 'lenient');
      const junk = await post(s.base, '/mcp/lenient', call('j', 'junk'), { 'mcp-session-id': sid });
      assert.equal(junk.status, 200, junk.text);
      assert.match(junk.text, /junk done/);
      assert.doesNotMatch(junk.text, /^data: (null|42|"text"|true|\[\])$/m);
      const echo = await post(s.base, '/mcp/lenient', call('e', 'echo'), { 'mcp-session-id': sid });
      assert.equal(echo.status, 200, 'the gateway and the session survive');
      assert.match(s.log(), /not a JSON-RPC message/);
    } finally {
      await s.stop();
    }
  });
});
