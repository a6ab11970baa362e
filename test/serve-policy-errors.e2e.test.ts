// Issue 23 (#17, #19, #21): serve refuses a policy it cannot load, shows a rejected edit, shows the configured verdicts, and says what to do when its address is taken.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BIN, cli, LENIENT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'admin-token-for-policy-error-tests';

function config(dir: string, policy: string, extra: object = {}): string {
  return writePolicy(dir, {
    listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db', admin: { token: ADMIN },
    servers: { lenient: { command: process.execPath, args: [LENIENT], policy } }, ...extra,
  }, 'toolgate.json');
}

/** Polls until `check` holds (bounded), for what the gateway's file watcher does in another process. */
async function eventually(check: () => Promise<boolean>, tries = 200): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** `toolgate serve -c FILE --json`, until it prints where it listens. */
async function serve(file: string, dir: string): Promise<{ base: string; log: () => string; stop: () => Promise<unknown> }> {
  const child = spawn(process.execPath, [BIN, 'serve', '-c', file, '--json'], { env: testEnv(dir, { TOOLGATE_LOG_LEVEL: 'info' }) });
  let out = '';
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const exited = new Promise((r) => child.on('exit', r));
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      try { resolve((JSON.parse(out) as { listen: string }).listen); } catch { /* more to come */ }
    });
    void exited.then(() => reject(new Error(`serve exited: ${log}`)));
  });
  return { base, log: () => log, stop: () => { child.kill('SIGTERM'); return exited; } };
}

describe('serve: policy files that do not load', () => {
  it('a missing policy file refuses the start (exit 2), naming the server and the file', async () => {
    const dir = tempDir();
    const file = config(dir, './nosuch.json');
    const r = await cli(['serve', '-c', file], testEnv(dir));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^toolgate: server "lenient" has an invalid policy: .*nosuch\.json: \/: cannot read .*nosuch\.json: ENOENT\n$/);
    assert.doesNotMatch(r.stdout + r.stderr, /listening/);
  });

  it('an invalid policy file refuses the start with its line and column', async () => {
    const dir = tempDir();
    const policy = join(dir, 'p.yaml');
    writeFileSync(policy, 'version: "1"\ndefault: allow\ntools:\n  echo:\n    action: maybe\n');
    const r = await cli(['serve', '-c', config(dir, policy)], testEnv(dir));
    assert.equal(r.code, 2);
    assert.ok(r.stderr.includes(`${policy}:5:13: /tools/echo/action:`), r.stderr);
  });

  it('a bad edit after start keeps the last good policy and shows on /healthz and in the admin API until fixed', async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    const { base, log, stop } = await serve(config(dir, policy), dir);
    try {
      const health = async () => (await fetch(`${base}/healthz`)).json() as Promise<{ status: string; warnings: string[] }>;
      assert.deepEqual(await health().then((h) => [h.status, h.warnings]), ['ok', []]);

      writeFileSync(policy, '{ "version": "1", "default": "allow", "tools": { "x": { "action": "maybe" } } }');
      assert.ok(await eventually(async () => (await health()).status === 'degraded'), 'the rejected edit shows');
      const h = await health();
      assert.equal(h.warnings.length, 1);
      assert.match(h.warnings[0], /^server "lenient": the last edit of its policy file was rejected; the previous version still decides its calls/);
      assert.ok(!h.warnings[0].includes(dir), '/healthz has no credentials: it does not show paths or the problem');
      assert.match(log(), /"level":50.*policy reload rejected, keeping the previous policy.*\/tools\/x\/action/, 'logged as an error');
      const servers = await (await fetch(`${base}/api/servers`, { headers: { authorization: `Bearer ${ADMIN}` } })).json() as { policyProblem: { problem: string } | null }[];
      assert.match(servers[0].policyProblem!.problem, /policy\.json:1:\d+: \/tools\/x\/action/);

      writeFileSync(policy, JSON.stringify({ version: '1', default: 'allow' }));
      assert.ok(await eventually(async () => (await health()).status === 'ok'), 'a good version clears the warning');
      assert.ok(await eventually(async () => log().split('\n').some((l) => l.includes('"level":30') && l.includes(`policy ${policy} loads again`))), 'the fix is logged');
    } finally {
      await stop();
    }
  });
});

describe('serve: a configuration reload', () => {
  it('that adds a server with an invalid policy is rejected with the file and position; the running servers stay', async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    const file = config(dir, policy);
    const { base, log, stop } = await serve(file, dir);
    try {
      const bad = join(dir, 'bad.yaml');
      writeFileSync(bad, 'version: "1"\ndefault: maybe\n');
      const next = () => writePolicy(dir, {
        listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db', admin: { token: ADMIN },
        servers: { lenient: { command: process.execPath, args: [LENIENT], policy }, added: { command: process.execPath, args: [LENIENT], policy: bad } },
      }, 'toolgate.json');
      // Written again now and then: serve starts watching its configuration just after it prints where it listens.
      let tries = 0;
      assert.ok(await eventually(async () => {
        if (tries++ % 20 === 0) next();
        return log().includes('configuration reload rejected');
      }), log());
      assert.ok(log().includes(`server \\"added\\" has an invalid policy: ${bad}:2:10: /default:`), log());
      const servers = await (await fetch(`${base}/api/servers`, { headers: { authorization: `Bearer ${ADMIN}` } })).json() as { name: string }[];
      assert.deepEqual(servers.map((s) => s.name), ['lenient']);
    } finally {
      await stop();
    }
  });
});

describe('dashboard: a configured server\'s record', () => {
  it("carries the configured policy's verdict of each tool beside the recommended one", async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'deny', tools: { delete_all: {} } });
    const { base, stop } = await serve(config(dir, policy), dir);
    try {
      const res = await fetch(`${base}/api/servers/lenient/record`, { headers: { authorization: `Bearer ${ADMIN}` } });
      const r = await res.json() as { tools: { name: string; verdict: string }[]; configured: { file: string; tools: { tool: string; verdict: string; rule: string }[] } };
      assert.equal(r.configured.file, policy);
      const configured = new Map(r.configured.tools.map((t) => [t.tool, t]));
      const recommended = new Map(r.tools.map((t) => [t.name, t.verdict]));
      assert.deepEqual([configured.get('delete_all')!.verdict, configured.get('delete_all')!.rule], ['Allowed', '/tools/delete_all']);
      assert.notEqual(recommended.get('delete_all'), 'Allowed', 'the recommended verdict differs: the page must show which is which');
      assert.deepEqual([configured.get('echo')!.verdict, configured.get('echo')!.rule], ['Hidden', '(default)']);
      assert.equal(recommended.get('echo'), 'Allowed');
    } finally {
      await stop();
    }
  });
});

describe('serve: the listen address is taken', () => {
  it('says so and names --listen', async () => {
    const dir = tempDir();
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const { port } = taken.address() as { port: number };
    try {
      const r = await cli(['serve', '-c', config(dir, writePolicy(dir, { version: '1', default: 'allow' }), { listen: `127.0.0.1:${port}` })], testEnv(dir));
      assert.equal(r.code, 2);
      assert.equal(r.stderr, `toolgate: 127.0.0.1:${port} is already in use: stop what listens there, or choose another address with --listen HOST:PORT (or listen: in the configuration)\n`);
    } finally {
      taken.close();
    }
  });
});
