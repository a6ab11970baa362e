import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RECORDING, until } from './helpers/approvals.js';
import { BIN, cli, EVERYTHING, LENIENT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'admin-token-for-new-user-tests-0123';

describe('state: memory: is private to the gateway process', () => {
  it('state commands refuse it (exit 2, one line naming the admin API); serve prints the admin API way to approve and to create grants', async () => {
    const home = tempDir();
    const policy = writePolicy(home, { version: '1', default: 'deny', tools: { delete_file: { action: 'approve' } } });
    const config = join(home, 'hook.yaml');
    writeFileSync(config, [
      'listen: 127.0.0.1:0',
      'state: "memory:"',
      'audit: ./audit.db',
      'admin: { token: "${ADMIN_TOKEN}" }',
      'servers:',
      '  rec:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(RECORDING)}]`,
      `    env: { RECORD_FILE: ${JSON.stringify(join(home, 'calls.jsonl'))} }`,
      `    policy: ${JSON.stringify(policy)}`,
      '',
    ].join('\n'));
    const env = testEnv(home, { ADMIN_TOKEN: ADMIN, TOOLGATE_LOG_LEVEL: 'info' });
    for (const args of [['kill-switch', 'on', '-c', config], ['kill-switch', 'status', '--state', 'memory:'], ['grants', 'create', '-c', config, '--server', 'rec', '--label', 'me'],
      ['approvals', 'list', '-c', config], ['approvals', 'approve', 'abc', '-c', config], ['approvals', 'deny', 'abc', '--state', 'memory:'], ['status', '-c', config]]) {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')} must refuse: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout, '', `${args.join(' ')} reports nothing as done`);
      assert.match(r.stderr, /memory:.*\/api\/kill-switch/, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, args.join(' '));
    }

    const child = spawn(process.execPath, [BIN, 'serve', '-c', config], { env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      const base = await until(() => /"listen":"(http:\/\/[^"]+)"/.exec(err)?.[1], 'serve listening');
      await until(() => (out.includes('/api/grants') ? true : undefined), 'the start text');
      assert.doesNotMatch(out, /toolgate grants create/);
      const client = new Client({ name: 'new-user', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/rec/mcp`), { requestInit: { headers: { authorization: `Bearer ${await grant(base)}` } } }));
      const progress: string[] = [];
      const held = client.callTool({ name: 'delete_file', arguments: { path: '/a' } }, undefined, { onprogress: (p) => progress.push(p.message ?? '') }).catch(() => undefined);
      const id = await until(async () => (await (await fetch(`${base}/api/approvals?status=pending`, { headers: { authorization: `Bearer ${ADMIN}` } })).json())[0]?.id as string | undefined, 'a pending approval');
      await until(() => (err.includes(`approval ${id}`) ? true : undefined), 'the held notice in the log');
      await until(() => progress[0], 'the waiting message');
      for (const text of [progress[0], err]) {
        assert.doesNotMatch(text, /toolgate approvals (approve|deny)/);
        assert.match(text, new RegExp(`/api/approvals/${id}/approve`));
      }
      await fetch(`${base}/api/approvals/${id}/deny`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: '{}' });
      await held;
      await client.close();
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});

describe('toolgate run --state memory:', () => {
  it('a held call does not print an approve command that cannot reach the state', async () => {
    const home = tempDir();
    const policy = writePolicy(home, { version: '1', default: 'deny', tools: { delete_file: { action: 'approve' } } });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'run', '-p', policy, '--state', 'memory:', '--', process.execPath, RECORDING],
      env: testEnv(home, { RECORD_FILE: join(home, 'calls.jsonl') }),
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
    const client = new Client({ name: 'new-user', version: '1' });
    await client.connect(transport);
    const held = client.callTool({ name: 'delete_file', arguments: { path: '/a' } }).catch(() => undefined);
    const notice = await until(() => stderr.split('\n').find((l) => l.includes('is held for approval')), 'the held notice');
    assert.doesNotMatch(notice, /toolgate approvals (approve|deny)/);
    assert.match(notice, /memory:.*--state sqlite:PATH/);
    await client.close();
    await held;
  });
});

async function grant(base: string): Promise<string> {
  const res = await fetch(`${base}/api/grants`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ server: 'rec', label: 'me' }) });
  return ((await res.json()) as { token: string }).token;
}

describe('state commands with -c: secrets they do not use may be unset', () => {
  it('webhook and metrics secrets, a server env: unset ${VAR}s do not stop grants, kill-switch or approvals', async () => {
    const home = tempDir();
    const config = join(home, 'toolgate.yaml');
    writeFileSync(config, [
      'listen: 127.0.0.1:0',
      'state: sqlite:./state.db',
      'audit: ./audit.db',
      'admin: { token: "${TG_UNSET_ADMIN}" }',
      'metrics: { token: "${TG_UNSET_METRICS}" }',
      'servers:',
      '  lenient:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(LENIENT)}]`,
      '    env: { API_KEY: "${TG_UNSET_KEY}" }',
      '    approvals:',
      '      webhook: { url: "http://127.0.0.1:9/hook", secret: "${TOOLGATE_WEBHOOK_SECRET}" }',
      '',
    ].join('\n'));
    const env = testEnv(home);
    for (const name of ['TG_UNSET_ADMIN', 'TG_UNSET_METRICS', 'TG_UNSET_KEY', 'TOOLGATE_WEBHOOK_SECRET']) delete env[name];
    for (const args of [['grants', 'create', '--server', 'lenient', '--label', 'ci'], ['kill-switch', 'on'], ['kill-switch', 'status'], ['approvals', 'list'], ['grants', 'list']]) {
      const r = await cli([...args, '-c', config], env);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    // record --server needs the server's own env: still refused, naming the variable.
    const rec = await cli(['record', '--server', 'lenient', '-c', config], env);
    assert.equal(rec.code, 2);
    assert.match(rec.stderr, /TG_UNSET_KEY/);
  });
});

describe('status with an unreachable state store', () => {
  it('says the kill switch is unknown, not off (text and --json)', async () => {
    const home = tempDir();
    const env = testEnv(home);
    assert.equal((await cli(['grants', 'create', '--server', 'x', '--label', 'me'], env)).code, 0); // an audit log to read
    const state = 'redis://127.0.0.1:1/0'; // port 1: nothing listens there, and no test ever binds it (a free port could be given to another file's Redis)
    const text = await cli(['status', '--state', state], env);
    assert.match(text.stdout, /kill switch: unknown \(state store unreachable\)/);
    assert.doesNotMatch(text.stdout, /kill switch off/);
    const json = await cli(['status', '--state', state, '--json'], env);
    assert.equal(JSON.parse(json.stdout).killSwitch, null);
  });
});

describe('toolgate records: pin state as it is now', () => {
  it('a server pinned after it was recorded lists as pinned, not as the catalog kept it', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const server = ['--', process.execPath, LENIENT];
    assert.equal((await cli(['record', ...server], env)).code, 0);
    const before = JSON.parse((await cli(['records', '--json'], env)).stdout) as { verification: string }[];
    assert.deepEqual(before.map((r) => r.verification), ['unpinned']);
    const pinned = await cli(['pin', ...server], env);
    assert.equal(pinned.code, 0, pinned.stderr);
    const after = await cli(['records', '--json'], env);
    assert.equal(after.code, 0, after.stderr);
    assert.deepEqual((JSON.parse(after.stdout) as { verification: string }[]).map((r) => r.verification), ['pinned']);
    assert.match((await cli(['records'], env)).stdout, / pinned /);
  });
});

describe('policy recommend and record list what a capable client sees', () => {
  it('server-everything: the tools it offers only to clients with URL elicitation or tasks are covered', async () => {
    const home = tempDir();
    const r = await cli(['policy', 'recommend', '--', process.execPath, EVERYTHING], testEnv(home));
    assert.equal(r.code, 0, r.stderr);
    const tools = Object.keys(JSON.parse(r.stdout).tools);
    for (const name of ['trigger-sampling-request', 'trigger-elicitation-request', 'get-roots-list', 'trigger-url-elicitation', 'trigger-sampling-request-async', 'trigger-elicitation-request-async']) {
      assert.ok(tools.includes(name), `${name} in the recommended policy (${tools.length} tools)`);
    }
  });
});

describe('a server that does not start', () => {
  it('pin, record and policy recommend say its exit code and last stderr lines, escaped and with secrets masked', async () => {
    const home = tempDir();
    const bad = join(home, 'bad.mjs');
    writeFileSync(bad, [
      'process.stderr.write("loading config\\x1b[2J\\n");',
      'process.stderr.write("Error: cannot open /nope/db (token " + process.env.MY_API_TOKEN + ")\\n");',
      'process.exit(3);',
    ].join('\n'));
    const env = testEnv(home, { MY_API_TOKEN: 'supersecretvalue123' });
    for (const cmd of [['pin'], ['record'], ['policy', 'recommend']]) {
      const r = await cli([...cmd, '--', process.execPath, bad], env);
      assert.equal(r.code, 2, cmd.join(' '));
      const line = r.stderr.trim();
      assert.equal(line.split('\n').length, 1, `one line: ${line}`);
      assert.match(line, /exit code 3; stderr: loading config\\u\{1B\}\[2J \| Error: cannot open \/nope\/db \(token \*\*\*\)/, cmd.join(' '));
      assert.ok(!line.includes('supersecretvalue123') && !line.includes('\x1b'), cmd.join(' '));
    }
  });
});

describe('small things a new user hit', () => {
  it('policy validate of a missing file: exit 2, "no such file: PATH"', async () => {
    const home = tempDir();
    const r = await cli(['policy', 'validate', join(home, 'nope.json')], testEnv(home));
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim(), `toolgate: no such file: ${join(home, 'nope.json')}`);
  });

  it('record --format md -o fs.md writes that file, not a folder', async () => {
    const home = tempDir();
    const out = join(home, 'fs.md');
    const r = await cli(['record', '--format', 'md', '-o', out, '--', process.execPath, LENIENT], testEnv(home));
    assert.equal(r.code, 0, r.stderr);
    assert.ok(statSync(out).isFile(), 'fs.md is a file');
    assert.match(readFileSync(out, 'utf8'), /^# /m);
    assert.doesNotMatch(readFileSync(out, 'utf8'), /\]\(tools\//, 'no links to tool pages that were never written');
  });

  it('policy explain names the window of each limit it counts against (not "per window")', async () => {
    const home = tempDir();
    const policy = writePolicy(home, { version: '1', default: 'deny', tools: { t: { limits: [
      { counter: 'a', window: 'minute', max: 30 }, { counter: 'b', window: 'day', max: 5 }, { counter: 'c', window: 90, max: 2 },
    ] } } });
    const r = await cli(['policy', 'explain', policy, '--tool', 't', '--args', '{}'], testEnv(home));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /counts 1 against "a" \(max 30 per minute\)/);
    assert.match(r.stdout, /counts 1 against "b" \(max 5 per day\)/);
    assert.match(r.stdout, /counts 1 against "c" \(max 2 per 90 s window\)/);
  });

  it('a reader that closes the pipe early (| head -1) gets no stack trace, and the exit is clean', async () => {
    const home = tempDir();
    const child = spawn(process.execPath, [BIN, 'policy', 'schema'], { env: testEnv(home), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });
});
