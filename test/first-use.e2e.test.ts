import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { cli as toolgate, LENIENT, RawSession, ROOT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);

describe('install: toolgate on the PATH from a checkout', () => {
  it('npm install -g into a prefix gives a toolgate command that runs from any directory', async () => {
    const prefix = tempDir();
    const elsewhere = tempDir();
    // What the README says (npm install -g .), into a throwaway prefix; the checkout is built already.
    await exec('npm', ['install', '-g', '--prefix', prefix, '--offline', '--ignore-scripts', '--no-audit', '--no-fund', ROOT], { cwd: elsewhere });
    const bin = join(prefix, 'bin', 'toolgate');
    assert.ok(existsSync(bin), 'npm linked the toolgate bin');
    const env = { ...testEnv(elsewhere), PATH: `${join(prefix, 'bin')}:${process.env.PATH}` };
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const out = await exec('toolgate', ['--version'], { cwd: elsewhere, env });
    assert.equal(out.stdout.trim(), version);
    writeFileSync(join(elsewhere, 'p.yaml'), 'version: 1\ndefault: deny\ntools:\n  echo: {}\n');
    const valid = await exec('toolgate', ['policy', 'validate', 'p.yaml'], { cwd: elsewhere, env });
    assert.equal(valid.stdout, 'p.yaml: valid (1 tool entries, default deny, enforce)\n');
  });
});

describe('test hygiene', () => {
  it('no test times anything: speed belongs in npm run bench', () => {
    const files = [...readdirSync(join(ROOT, 'test')).map((f) => join('test', f)), ...readdirSync(join(ROOT, 'test/helpers')).map((f) => join('test/helpers', f))]
      .filter((f) => f.endsWith('.ts'));
    const timed = files.filter((f) => /performance\.now\(|process\.hrtime|console\.time\(/.test(readFileSync(join(ROOT, f), 'utf8')));
    assert.deepEqual(timed, []);
  });

  it('tempDir directories are gone when the test process exits', async () => {
    const tmp = tempDir();
    const script = `import { existsSync } from 'node:fs';
      import { tempDir } from ${JSON.stringify(join(ROOT, 'test/helpers/toolgate.ts'))};
      const a = tempDir(); const b = tempDir('toolgate-fs-');
      if (!existsSync(a) || !existsSync(b)) process.exit(3);
      console.log(JSON.stringify([a, b]));`;
    const { stdout } = await exec(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, TMPDIR: tmp } });
    const made = JSON.parse(stdout) as string[];
    assert.equal(made.length, 2);
    assert.ok(made.every((d) => d.startsWith(tmp) && !existsSync(d)), 'both were made under TMPDIR and removed at exit');
  });

  it('a real test file leaves no toolgate-* directory behind', async () => {
    const tmp = tempDir();
    const env: Record<string, string | undefined> = { ...process.env, TMPDIR: tmp };
    delete env.NODE_TEST_CONTEXT; // a test run of its own, reporting as usual
    const run = await exec(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', 'test/audit.test.ts'], { cwd: ROOT, env });
    assert.match(run.stdout, /# fail 0/);
    assert.deepEqual(readdirSync(tmp).filter((f) => f.startsWith('toolgate-')), []);
  });
});

describe('policy files as people write them', () => {
  it('YAML version: 1 unquoted is accepted, and runs', async () => {
    const dir = tempDir();
    const file = writePolicy(dir, 'version: 1\ndefault: allow\n', 'p.yaml');
    const r = await toolgate(['policy', 'validate', file], testEnv(dir));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const explain = await toolgate(['policy', 'explain', file, '--tool', 'x', '--json'], testEnv(dir));
    assert.equal(JSON.parse(explain.stdout).verdict, 'allow');
    const two = await toolgate(['policy', 'validate', writePolicy(dir, 'version: 2\n', 'two.yaml')], testEnv(dir));
    assert.equal(two.code, 1);
    assert.match(two.stdout, /two\.yaml:1:10: \/version: version must be "1"/);
  });

  it('a .json policy or config that is not strict JSON is refused with line:column', async () => {
    const dir = tempDir();
    const bad = writePolicy(dir, '{\n  "version": "1",\n  "tools": {"a": {},}\n}\n', 'bad.json');
    const r = await toolgate(['policy', 'validate', bad], testEnv(dir));
    assert.equal(r.code, 1);
    assert.equal(r.stdout, `${bad}:3:21: /: not valid JSON: property name expected\n`);
    const comment = await toolgate(['policy', 'validate', writePolicy(dir, '{"version": "1"} // no\n', 'c.json')], testEnv(dir));
    assert.match(comment.stdout, /c\.json:1:18: \/: not valid JSON/);
    // The same text under a YAML name is YAML, which allows the trailing comma.
    const yaml = await toolgate(['policy', 'validate', writePolicy(dir, '{\n  "version": "1",\n  "tools": {"a": {},}\n}\n', 'ok.yaml')], testEnv(dir));
    assert.equal(yaml.code, 0, yaml.stdout);
    const config = writePolicy(dir, '{"listen": "127.0.0.1:0", "servers": {},}', 'toolgate.json');
    const serve = await toolgate(['serve', '-c', config], testEnv(dir));
    assert.equal(serve.code, 2);
    assert.equal(serve.stderr, `toolgate: invalid configuration ${config}:1:41: /: not valid JSON: property name expected\n`);
  });
});

describe('tools/list shows only tools a call could reach', () => {
  const policy = {
    version: '1', default: 'deny',
    tools: { echo: {}, delete_all: { action: 'deny' }, slow: { limits: [{ counter: 's', window: 'minute', max: 5 }] }, refund: { action: 'approve' } },
  };

  it('under default deny, unlisted and action: deny tools are left out, page by page with the cursor kept', async () => {
    const dir = tempDir();
    const log = join(dir, 'lenient.log');
    const raw = new RawSession(['-p', writePolicy(dir, policy), '--', process.execPath, LENIENT], testEnv(dir, { LENIENT_LOG: log }));
    await raw.initialize();
    const first = await raw.request(1, 'tools/list');
    assert.deepEqual(first.result.tools.map((t: { name: string }) => t.name), ['echo']);
    assert.equal(first.result.nextCursor, 'page-2');
    const second = await raw.request(2, 'tools/list', { cursor: 'page-2' });
    assert.deepEqual(second.result.tools.map((t: { name: string }) => t.name), ['slow', 'refund']);
    assert.equal(second.result.nextCursor, undefined);

    const unlisted = await raw.request(3, 'tools/call', { name: 'read_file', arguments: {} });
    assert.equal(unlisted.result.content[0].text, '[POLICY DENIED] The policy has no entry for "read_file" and denies what it does not list (default: deny). To allow it, add "read_file": {} under "tools" in the policy.');
    assert.deepEqual(unlisted.result._meta['dev.toolgate/decision'], { rule: '(default)', retryAfterSeconds: null });
    // A name the server does not have gets the very same words: nothing is confirmed.
    const nosuch = await raw.request(4, 'tools/call', { name: 'no_such_tool', arguments: {} });
    assert.equal(nosuch.result.content[0].text, unlisted.result.content[0].text.replaceAll('read_file', 'no_such_tool'));
    await raw.close();
    assert.ok(!readFileSync(log, 'utf8').includes('"read_file"'), 'the denied call never reached the server');
  });

  it('under default allow only action: deny (and hide) go; in shadow mode only hide', async () => {
    const dir = tempDir();
    const allow = writePolicy(dir, { version: '1', default: 'allow', hide: ['hang'], tools: { delete_all: { action: 'deny' } } });
    const names = async (extra: string[]) => {
      const raw = new RawSession(['-p', allow, ...extra, '--', process.execPath, LENIENT], testEnv(dir));
      await raw.initialize();
      const a = (await raw.request(1, 'tools/list')).result.tools;
      const b = (await raw.request(2, 'tools/list', { cursor: 'page-2' })).result.tools;
      await raw.close();
      return [...a, ...b].map((t: { name: string }) => t.name);
    };
    assert.deepEqual(await names([]), ['echo', 'fail', 'slow', 'refund', 'read_file']);
    assert.deepEqual(await names(['--shadow']), ['echo', 'delete_all', 'fail', 'slow', 'refund', 'read_file']);
  });
});

describe('toolgate run --json', () => {
  it("prints JSON only: the wrapped server's stderr becomes log entries; without --json it passes through raw", async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    const env = testEnv(dir, { LENIENT_STDERR: 'lenient is starting', TOOLGATE_LOG_LEVEL: 'info' });
    const json = new RawSession(['-p', policy, '--json', '--name', 'len', '--', process.execPath, LENIENT], env);
    await json.initialize();
    await json.close();
    const lines = json.stderr.trim().split('\n');
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const said = entries.find((e) => e.msg === 'lenient is starting');
    assert.ok(said, json.stderr);
    assert.equal(said.server, 'len');
    assert.equal(said.stream, 'stderr');
    assert.match(String(said.session), /^[0-9a-f-]{36}$/);

    const raw = new RawSession(['-p', policy, '--', process.execPath, LENIENT], env);
    await raw.initialize();
    await raw.close();
    assert.match(raw.stderr, /^lenient is starting$/m);
  });

  it('an error under --json is one JSON line', async () => {
    const dir = tempDir();
    const r = await toolgate(['run', '--json', '-p', join(dir, 'missing.json'), '--', 'true'], testEnv(dir));
    assert.equal(r.code, 2);
    const err = JSON.parse(r.stderr) as { error: string; code: number };
    assert.equal(err.code, 2);
    assert.match(err.error, /missing\.json/);
    assert.equal(r.stdout, '');
  });
});
