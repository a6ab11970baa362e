import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TestRedis } from './helpers/redis.js';
import { cli, FIXTURES, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';
import { Serve } from './helpers/serve.js';

const ENV_SERVER = join(FIXTURES, 'env-server.mjs');
const ADMIN_TOKEN = 'admin-token-Zq81xVb2Lm77Pc0';
const WEBHOOK_SECRET = 'webhook-secret-Hk39sRt5Wq12';
const REDIS_PASSWORD = 'redis-pass-Ue47nBy6';
const SECRETS = [ADMIN_TOKEN, WEBHOOK_SECRET, REDIS_PASSWORD];

interface Dump { argv: string[]; env: Record<string, string> }

/** Every environment the env server was started with, one per process, from the files it wrote. */
function dumps(dir: string): Dump[] {
  return readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Dump);
}

/** No secret of toolgate's, whole or inside another value, anywhere in what a child received. */
function assertNoSecret(dump: Dump): void {
  const text = JSON.stringify(dump);
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `a child received toolgate's secret ${secret.split('-').slice(0, 2).join('-')}: ${Object.keys(dump.env).join(', ')}`);
}


describe('serve: an upstream gets its env, env_inherit and the base — never toolgate\'s own secrets', () => {
  let dir: string;
  let out: string;
  let env: Record<string, string>;
  let config: string;
  let redis: TestRedis;
  let serve: Serve;
  let record: { auth: { secretEnv?: string[] } };

  before(async () => {
    dir = tempDir();
    out = join(dir, 'dumps');
    mkdirSync(out);
    redis = await TestRedis.start(['--requirepass', REDIS_PASSWORD]);
    env = testEnv(dir, {
      TOOLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TG_WEBHOOK_SECRET: WEBHOOK_SECRET,
      TG_REDIS_PASSWORD: REDIS_PASSWORD,
      // A copy of a secret under an unrelated name: matched by value, so it cannot pass either.
      ANOTHER_NAME_FOR_IT: ADMIN_TOKEN,
      INHERIT_ME: 'inherited-value',
      UNLISTED_API_KEY: 'unlisted-key-value',
      LANG: 'C.UTF-8',
      LC_TIME: 'C',
      NO_PROXY: 'example.internal',
      SSL_CERT_FILE: join(dir, 'ca.pem'),
      USER: 'someone',
      SHELL: '/bin/sh',
    });
    const configured = {
      listen: '127.0.0.1:0',
      state: `redis://:\${TG_REDIS_PASSWORD}@127.0.0.1:${redis.port}/0?prefix=envtest`,
      audit: './audit.db',
      admin: { token: '${TOOLGATE_ADMIN_TOKEN}' },
      oauth: { builtin: true },
      servers: {
        envdump: {
          command: process.execPath,
          args: [ENV_SERVER, out],
          auth: 'none',
          env: { SERVICE_API_KEY: 'service-key-value', PLAIN: 'plain-value' },
          env_inherit: ['INHERIT_ME', 'NOT_SET_ANYWHERE'],
          approvals: { webhook: { url: 'http://127.0.0.1:9/hook', secret: '${TG_WEBHOOK_SECRET}' } },
        },
      },
    };
    config = writePolicy(dir, configured, 'toolgate.json');
    // State commands do not read a configuration with oauth.builtin yet (issue 23 item 15, another branch): the same without it.
    const { oauth: _oauth, ...forCli } = configured;
    const cliConfig = writePolicy(dir, forCli, 'toolgate-cli.json');
    serve = new Serve(['-c', config, '--json'], env);
    const info = await serve.started();

    // 1. A client session: the gateway starts the server for it.
    const client = new Client({ name: 'env-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(info.servers[0].mcp[0])));
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['print_env']);
    await client.close();
    // 2. The dashboard's and admin API's listing of the server.
    const res = await fetch(`${info.listen}/api/servers/envdump/record`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200, await res.clone().text());
    await res.body?.cancel();
    // 3. The state commands that start a configured server.
    const recorded = await cli(['record', '--server', 'envdump', '-c', cliConfig, '--json', '--no-catalog'], env);
    assert.equal(recorded.code, 0, recorded.stderr);
    record = JSON.parse(recorded.stdout);
    const pinned = await cli(['pin', '--server', 'envdump', '-c', cliConfig, '--json'], env);
    assert.equal(pinned.code, 0, pinned.stderr);
    const recommended = await cli(['policy', 'recommend', '--server', 'envdump', '-c', cliConfig], env);
    assert.equal(recommended.code, 0, recommended.stderr);
  });

  after(async () => {
    if (serve?.child.exitCode === null) {
      serve.child.kill('SIGTERM');
      await serve.exited;
    }
    await redis?.stop();
  });

  it('every child (session, dashboard listing, record, pin, policy recommend) was started and holds no secret of toolgate\'s', () => {
    const all = dumps(out);
    assert.ok(all.length >= 5, `expected at least 5 children, found ${all.length}`);
    for (const d of all) assertNoSecret(d);
  });

  it('each child\'s environment is exactly its env, its env_inherit names and the base', () => {
    const expected = {
      SERVICE_API_KEY: 'service-key-value', PLAIN: 'plain-value', INHERIT_ME: 'inherited-value',
      PATH: env.PATH, HOME: env.HOME, LANG: 'C.UTF-8', LC_TIME: 'C', NO_PROXY: 'example.internal', SSL_CERT_FILE: join(dir, 'ca.pem'),
    };
    for (const d of dumps(out)) {
      const base = new Set(['PATH', 'HOME', 'LANG', 'LANGUAGE', 'TMPDIR', 'TMP', 'TEMP', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE']);
      const extra = Object.keys(d.env).filter((k) => !base.has(k) && !/^LC_/.test(k) && !['SERVICE_API_KEY', 'PLAIN', 'INHERIT_ME'].includes(k));
      assert.deepEqual(extra, [], `unexpected variables in ${d.argv.join(' ')}`);
      for (const [k, v] of Object.entries(expected)) assert.equal(d.env[k], v, k);
      for (const k of ['TOOLGATE_ADMIN_TOKEN', 'UNLISTED_API_KEY', 'USER', 'SHELL', 'NOT_SET_ANYWHERE']) assert.equal(d.env[k], undefined, k);
    }
  });

  it('the record\'s "receives secret-looking variables" names what really passes', () => {
    assert.deepEqual(record.auth.secretEnv, ['SERVICE_API_KEY']);
  });
});

// The limit only tells a hang from a slow machine: a gateway that accepted the configuration would serve on and never exit.
describe('serve: a configuration that would hand a secret of toolgate\'s to an upstream is refused at start', { timeout: 240_000 }, () => {
  const token = 'admin-token-Rf55uJk8Nn90Aa2';
  const secret = 'webhook-secret-Pp61cXz3Qe48';
  let dir: string;
  let env: Record<string, string>;

  before(() => {
    dir = tempDir();
    env = testEnv(dir, { TOOLGATE_ADMIN_TOKEN: token, TG_HOOK: secret });
  });

  const refused = async (name: string, server: Record<string, unknown>, place: RegExp) => {
    const config = writePolicy(dir, {
      listen: '127.0.0.1:0', state: 'memory:', audit: './audit.db',
      admin: { token: '${TOOLGATE_ADMIN_TOKEN}' },
      servers: {
        fine: { command: process.execPath, args: [ENV_SERVER] },
        [name]: { approvals: { webhook: { url: 'http://127.0.0.1:9/hook', secret: '${TG_HOOK}' } }, ...server },
      },
    }, `${name}.json`);
    const started = await cli(['serve', '-c', config], env);
    assert.equal(started.code, 2, started.stdout + started.stderr);
    const lines = started.stderr.trim().split('\n');
    assert.equal(lines.length, 1, started.stderr);
    assert.match(lines[0], new RegExp(`server "${name}"`));
    assert.match(lines[0], place);
    assert.ok(!started.stderr.includes(token) && !started.stderr.includes(secret), 'the message never shows the value');
    assert.doesNotMatch(started.stdout, /listening|gateway on/);
    return config;
  };

  it('env: {X: ${TOOLGATE_ADMIN_TOKEN}}: exit 2, naming the server and the variable', async () => {
    const config = await refused('leaky', { command: process.execPath, args: [ENV_SERVER], env: { X: '${TOOLGATE_ADMIN_TOKEN}' } }, /variable X\b.*admin\.token/);
    // record and pin --server start it as serve would: refused the same way.
    const recorded = await cli(['record', '--server', 'leaky', '-c', config], env);
    assert.equal(recorded.code, 2, recorded.stderr);
    assert.match(recorded.stderr, /server "leaky".*variable X\b/);
    assert.ok(!recorded.stderr.includes(token));
  });

  it('a secret inside a longer value, through env_inherit, in an argument or a header is caught too', async () => {
    await refused('bearer', { command: process.execPath, args: [ENV_SERVER], env: { AUTH: 'Bearer ${TOOLGATE_ADMIN_TOKEN}' } }, /variable AUTH\b/);
    await refused('inherits', { command: process.execPath, args: [ENV_SERVER], env_inherit: ['TG_HOOK'] }, /variable TG_HOOK \(from env_inherit\).*webhook/);
    await refused('argv', { command: process.execPath, args: [ENV_SERVER, '--key=${TG_HOOK}'] }, /args\[1\]/);
    await refused('remote', { url: 'https://mcp.example.com/', headers: { Authorization: 'Bearer ${TOOLGATE_ADMIN_TOKEN}' } }, /header Authorization/);
  });
});

describe('run: the server inherits the client\'s environment, without toolgate\'s secrets', () => {
  it('API keys and the rest pass; TOOLGATE_ADMIN_TOKEN and any value holding a secret of toolgate\'s do not', async () => {
    const dir = tempDir();
    const out = join(dir, 'dumps');
    mkdirSync(out);
    const env = testEnv(dir, {
      CLIENT_API_KEY: 'client-key-value',
      SOME_SETTING: 'some-value',
      TOOLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      COPY_OF_TOKEN: ADMIN_TOKEN,
      TOOLGATE_STATE: `redis://:${REDIS_PASSWORD}@127.0.0.1:1/0`,
      COPY_OF_PASSWORD: REDIS_PASSWORD,
      USER: 'someone',
    });
    const session = new RawSession(['--state', 'memory:', '--', process.execPath, ENV_SERVER, out], env);
    await session.initialize();
    assert.equal(await session.close(), 0);
    // record -- CMD starts the server from the person's shell the same way.
    const recorded = await cli(['record', '--state', 'memory:', '--no-catalog', '--json', '--', process.execPath, ENV_SERVER, out], env);
    assert.equal(recorded.code, 0, recorded.stderr);
    assert.ok(JSON.parse(recorded.stdout).auth.secretEnv.includes('CLIENT_API_KEY'));
    const all = dumps(out);
    assert.equal(all.length, 2);
    for (const d of all) {
      assertNoSecret(d);
      assert.equal(d.env.CLIENT_API_KEY, 'client-key-value');
      assert.equal(d.env.SOME_SETTING, 'some-value');
      assert.equal(d.env.USER, 'someone');
      assert.equal(d.env.PATH, env.PATH);
      for (const k of ['TOOLGATE_ADMIN_TOKEN', 'COPY_OF_TOKEN', 'TOOLGATE_STATE', 'COPY_OF_PASSWORD']) assert.equal(d.env[k], undefined, k);
    }
  });
});
