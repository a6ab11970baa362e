import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { cli, LENIENT, MEMORY, RawSession, ROOT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

describe('state commands: -c FILE, --state DSN, --audit FILE', () => {
  let dir: string;
  let home: string;
  let env: Record<string, string>;
  let config: string;

  before(async () => {
    dir = tempDir();
    home = tempDir();
    // Neither variable is set: the admin token is not needed by state commands, the key only to start "secretive".
    env = testEnv(home);
    delete env.TG_UNSET_ADMIN;
    delete env.TG_UNSET_KEY;
    config = join(dir, 'toolgate.yaml');
    writeFileSync(config, [
      'listen: 127.0.0.1:0',
      'state: sqlite:./state.db',
      'audit: ./audit.db',
      'admin:',
      '  token: ${TG_UNSET_ADMIN}',
      'servers:',
      '  lenient:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(LENIENT)}]`,
      '  memory:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(MEMORY)}]`,
      `    env: { MEMORY_FILE_PATH: ${JSON.stringify(join(dir, 'memory.jsonl'))} }`,
      '  secretive:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(LENIENT)}]`,
      '    env: { API_KEY: "${TG_UNSET_KEY}" }',
      '',
    ].join('\n'));
  });

  it("every state command takes -c and uses that gateway's state and audit log, without the admin token's variable", async () => {
    const created = await cli(['grants', 'create', '-c', config, '--server', 'lenient', '--label', 'ci', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    const id = JSON.parse(created.stdout).id as string;
    // The same grant through --state and through --audit: -c meant the configuration's files.
    const listed = await cli(['grants', 'list', '--state', `sqlite:${join(dir, 'state.db')}`, '--json'], env);
    assert.deepEqual(JSON.parse(listed.stdout).map((g: { id: string }) => g.id), [id]);
    const audit = await cli(['audit', '--audit', join(dir, 'audit.db'), '--json'], env);
    assert.match(JSON.parse(audit.stdout)[0].message, new RegExp(`created ${id}`));
    // TOOLGATE_HOME was not touched.
    assert.equal((await cli(['grants', 'list', '--json'], env)).stdout.trim(), '[]');

    for (const args of [['grants', 'list'], ['audit'], ['audit', 'verify'], ['kill-switch', 'status'], ['status'], ['records']]) {
      const r = await cli([...args, '-c', config, '--json'], env);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.doesNotThrow(() => JSON.parse(r.stdout), `${args.join(' ')} prints JSON only`);
    }
    // serve does need the admin token.
    const serve = await cli(['serve', '-c', config], env);
    assert.equal(serve.code, 2);
    assert.match(serve.stderr, /\/admin\/token: the environment variable TG_UNSET_ADMIN is not set/);
    assert.doesNotMatch(serve.stderr, /16 characters/, 'an unset variable is one message, not also "too short"');
  });

  it('kill-switch on --server: an unknown name is refused with -c and warned about otherwise', async () => {
    const refused = await cli(['kill-switch', 'on', '--server', 'nosuch', '-c', config], env);
    assert.equal(refused.code, 2);
    assert.equal(refused.stderr, `toolgate: no server named "nosuch" in ${config} (servers: lenient, memory, secretive)\n`);
    assert.equal((await cli(['kill-switch', 'status', '-c', config, '--json'], env)).stdout.trim(), '[]', 'nothing was set');

    const known = await cli(['kill-switch', 'on', '--server', 'lenient', '-c', config, '--json'], env);
    assert.equal(known.code, 0, known.stderr);
    assert.equal(known.stderr, '');
    assert.deepEqual(JSON.parse(known.stdout).map((s: { scope: string; on: boolean }) => [s.scope, s.on]), [['lenient', true]]);
    await cli(['kill-switch', 'off', '--server', 'lenient', '-c', config], env);

    const warned = await cli(['kill-switch', 'on', '--server', 'nosuch', '--json'], env);
    assert.equal(warned.code, 0);
    assert.match(warned.stderr, /^toolgate: warning: no server named "nosuch" has been seen in .*audit\.db/);
    assert.doesNotThrow(() => JSON.parse(warned.stdout));
  });

  it('record and pin --server NAME with -c use the configured server and its name', async () => {
    const record = await cli(['record', '--server', 'memory', '-c', config, '--no-catalog', '--json'], env);
    assert.equal(record.code, 0, record.stderr);
    const r = JSON.parse(record.stdout);
    assert.equal(r.identity.serverInfo.name, 'memory-server');
    assert.equal(r.identity.origin.package, '@modelcontextprotocol/server-memory');

    const pin = await cli(['pin', '--server', 'lenient', '-c', config, '--json'], env);
    assert.equal(pin.code, 0, pin.stderr);
    assert.deepEqual([JSON.parse(pin.stdout).server, JSON.parse(pin.stdout).pinned], ['lenient', true]);
    // Kept in the configuration's state, under the name the gateway uses: its record sees the pins.
    const pinned = await cli(['record', '--server', 'lenient', '-c', config, '--no-catalog', '--json'], env);
    assert.equal(JSON.parse(pinned.stdout).identity.verification, 'pinned');
    const elsewhere = await cli(['record', '--no-catalog', '--json', '--name', 'lenient', '--', process.execPath, LENIENT], env);
    assert.equal(JSON.parse(elsewhere.stdout).identity.verification, 'unpinned', 'TOOLGATE_HOME has no pins');

    const secret = await cli(['record', '--server', 'secretive', '-c', config], env);
    assert.equal(secret.code, 2);
    assert.equal(secret.stderr, `toolgate: server "secretive" in ${config} needs /servers/secretive/env/API_KEY: the environment variable TG_UNSET_KEY is not set\n`);
    const nosuch = await cli(['pin', '--server', 'nosuch', '-c', config], env);
    assert.match(nosuch.stderr, /no server named "nosuch" in .*toolgate\.yaml/);
  });
});

describe('status and replay', () => {
  it('status lists only live serving processes; replay defaults to the servers the policy is for and says which', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const pa = writePolicy(home, { version: '1', default: 'allow', tools: { refund: { deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 100 }] }] } } }, 'a.json');
    const pb = writePolicy(home, { version: '1', default: 'allow' }, 'b.json');
    const a = new RawSession(['-p', pa, '--audit-args', '--name', 'shop', '--', process.execPath, LENIENT], env);
    const b = new RawSession(['-p', pb, '--audit-args', '--name', 'files', '--', process.execPath, LENIENT], env);
    await a.initialize();
    await b.initialize();
    await a.request(1, 'tools/call', { name: 'refund', arguments: { amount: 500 } });
    await b.request(1, 'tools/call', { name: 'read_file', arguments: { path: '/etc/hosts' } });
    // A command that writes to the audit log but serves nothing.
    await cli(['kill-switch', 'off'], env);

    const live = JSON.parse((await cli(['status', '--json'], env)).stdout);
    assert.deepEqual(live.instances.map((i: { servers: string[] }) => i.servers).sort(), [['files'], ['shop']]);
    assert.deepEqual(live.stopped, []);

    await a.close();
    b.child.kill('SIGKILL');
    await b.exited;
    const after = JSON.parse((await cli(['status', '--json'], env)).stdout);
    assert.deepEqual(after.instances, []);
    assert.deepEqual(after.stopped.map((s: { stopped: string | null }) => s.stopped === null).sort(), [false, true], 'one stopped, one died');
    assert.match((await cli(['status'], env)).stdout, /^no toolgate run or serve is running\nstopped in the last 15 min:\n/);

    // The policy a server ran with: only that server's calls.
    const mine = JSON.parse((await cli(['replay', '--policy', pa, '--since', '1h', '--json'], env)).stdout);
    assert.deepEqual([mine.servers, mine.basis, mine.examined], [['shop'], `toolgate ran them with ${pa}`, 1]);
    // A new policy naming a tool one server was called with.
    const next = writePolicy(home, { version: '1', default: 'deny', tools: { read_file: { action: 'deny' } } }, 'next.json');
    const text = await cli(['replay', '--policy', next, '--since', '1h'], env);
    assert.match(text.stdout, /^replaying calls to files \(the policy has entries for tools they were called with; choose with --server\)\n1 past calls examined, 1 decided differently/);
    // Nothing tells: several servers' history under one policy is refused, not guessed.
    const vague = await cli(['replay', '--policy', writePolicy(home, { version: '1', default: 'deny' }, 'vague.json'), '--since', '1h'], env);
    assert.equal(vague.code, 2);
    assert.match(vague.stderr, /cannot tell which server .*vague\.json is for: pass --server NAME \(servers in the audit log: files, shop\)/);
    const chosen = JSON.parse((await cli(['replay', '--policy', next, '--server', 'shop', '--since', '1h', '--json'], env)).stdout);
    assert.deepEqual([chosen.servers, chosen.basis], [['shop'], 'given with --server']);
  });

  it('replay with -c takes the servers configured with the policy', async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' }, 'p.json');
    const config = writePolicy(dir, {
      state: 'sqlite:./state.db', audit: './audit.db',
      servers: { one: { command: 'x', policy: './p.json' }, two: { command: 'x' } },
    }, 'toolgate.json');
    await cli(['kill-switch', 'off', '-c', config], testEnv(dir));
    const r = JSON.parse((await cli(['replay', '-c', config, '--policy', policy, '--json'], testEnv(dir))).stdout);
    assert.deepEqual([r.servers, r.basis], [['one'], `their policy in ${config}`]);
  });
});

describe('record origin', () => {
  it('a bin run through npx is named by its package and installed version', async () => {
    const home = tempDir();
    const r = await cli(['record', '--no-catalog', '--json', '--', 'npx', 'mcp-server-memory'], testEnv(home, { MEMORY_FILE_PATH: join(home, 'm.jsonl') }), ROOT);
    assert.equal(r.code, 0, r.stderr);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/package.json'), 'utf8')) as { version: string };
    assert.deepEqual(JSON.parse(r.stdout).identity.origin, {
      kind: 'command', commandLine: 'npx mcp-server-memory', package: '@modelcontextprotocol/server-memory', version,
    });
  });
});

describe('state commands on a configuration with the built-in authorization server', () => {
  it('read oauth: {builtin: true} configurations: they need only state and audit, not admin.token', async () => {
    const dir = tempDir();
    const env = testEnv(tempDir());
    delete env.TG_UNSET_ADMIN;
    const config = join(dir, 'toolgate.yaml');
    writeFileSync(config, [
      'state: sqlite:./state.db',
      'audit: ./audit.db',
      'admin:',
      '  token: ${TG_UNSET_ADMIN}',
      'oauth:',
      '  builtin: true',
      'servers:',
      '  lenient:',
      `    command: ${JSON.stringify(process.execPath)}`,
      `    args: [${JSON.stringify(LENIENT)}]`,
      '',
    ].join('\n'));
    const created = await cli(['grants', 'create', '-c', config, '--server', 'lenient', '--label', 'ci', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    for (const args of [['grants', 'list'], ['approvals', 'list'], ['audit'], ['audit', 'verify'], ['kill-switch', 'status'],
      ['kill-switch', 'on'], ['kill-switch', 'off'], ['status'], ['records'], ['pin', '--server', 'lenient'], ['record', '--server', 'lenient', '--no-catalog']]) {
      const r = await cli([...args, '-c', config, '--json'], env);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.doesNotThrow(() => JSON.parse(r.stdout), `${args.join(' ')} prints JSON only`);
    }
    // The approve command toolgate prints for a held call: an unknown id is the approval's error, not the configuration's.
    const approve = await cli(['approvals', 'approve', 'nosuch', '-c', config], env);
    assert.doesNotMatch(approve.stderr, /configuration|admin\.token/);
    assert.match(approve.stderr, /nosuch/);
    // serve still refuses it without the token.
    const serve = await cli(['serve', '-c', config], env);
    assert.equal(serve.code, 2);
    assert.match(serve.stderr, /admin/);
  });
});
