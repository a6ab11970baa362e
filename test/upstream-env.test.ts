import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema, parseGatewayConfig } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { clientEnv, configSecrets, OwnSecrets, secretLeak, serveEnv } from '../src/upstream-env/index.js';
import { tempDir } from './helpers/toolgate.js';

describe('upstream environment', () => {
  const from = {
    PATH: '/usr/bin', HOME: '/home/u', LANG: 'de_DE.UTF-8', LC_ALL: 'C', TMPDIR: '/tmp/x', https_proxy: 'http://proxy:3128',
    AWS_SECRET_ACCESS_KEY: 'aws-secret', USER: 'u', EDITOR: 'vi', WANTED: 'yes',
  };

  it('serve: the base, the env_inherit names that are set, then env (which wins)', () => {
    assert.deepEqual(serveEnv({ env: { HOME: '/srv/home', API_KEY: 'k' }, env_inherit: ['WANTED', 'UNSET'] }, from), {
      PATH: '/usr/bin', HOME: '/srv/home', LANG: 'de_DE.UTF-8', LC_ALL: 'C', TMPDIR: '/tmp/x', https_proxy: 'http://proxy:3128', WANTED: 'yes', API_KEY: 'k',
    });
  });

  it('run: everything but TOOLGATE_ADMIN_TOKEN and values holding a secret of toolgate\'s', () => {
    const env = { ...from, TOOLGATE_ADMIN_TOKEN: 'admin-token-0123456789', SAME: 'admin-token-0123456789', WRAPPED: 'Bearer admin-token-0123456789', TOOLGATE_STATE: 'redis://:pw-12345678@h:6379/0', PW: 'pw-12345678' };
    const out = clientEnv(new OwnSecrets().addOwnVars(env), env);
    assert.deepEqual(Object.keys(out).sort(), Object.keys(from).sort());
  });

  it('collects the admin token, webhook secrets and the store password from the configuration, by value', () => {
    const config = { admin: { token: 'the-admin-token-value' }, oauth: { builtin: true, access_token_ttl: '1h' }, servers: { a: { command: 'x', env: { token: 'not-collected' }, approvals: { webhook: { url: 'http://h', secret: 'the-webhook-secret' } } } } };
    const secrets = configSecrets(config, 'redis://user:short@h:6379/0', {});
    assert.equal(secrets.in('the-admin-token-value')?.what, 'admin.token');
    assert.equal(secrets.in('x the-webhook-secret y')?.what, 'approvals.webhook.secret of server "a"');
    assert.match(secrets.in('short')?.what ?? '', /password of the state store DSN/);
    assert.equal(secrets.in('a short word'), undefined, 'a short secret is matched only as the whole value');
    assert.equal(secrets.in('not-collected'), undefined, 'what a server hands its upstream is checked, not collected');
    assert.equal(secrets.in('1h'), undefined);
  });

  it('names the server and the place, never the value', () => {
    const secrets = new OwnSecrets().add('admin.token', 'the-admin-token-value');
    const leak = secretLeak('s', { command: 'node', env: { X: 'the-admin-token-value' } }, secrets, {});
    assert.match(leak ?? '', /^server "s": the environment variable X \(from env\) would hand its upstream toolgate's own secret \(admin\.token\)/);
    assert.ok(!leak!.includes('the-admin-token-value'));
    assert.match(secretLeak('s', { command: 'node', env_inherit: ['T'] }, secrets, { T: 'the-admin-token-value' }) ?? '', /variable T \(from env_inherit\)/);
    assert.match(secretLeak('s', { command: 'node' }, secrets, { HTTPS_PROXY: 'http://u:the-admin-token-value@p' }) ?? '', /variable HTTPS_PROXY \(from the base environment\)/);
    assert.match(secretLeak('r', { url: 'https://h/?k=the-admin-token-value' }, secrets) ?? '', /its url/);
    assert.equal(secretLeak('s', { command: 'node', env: { X: 'other' } }, secrets, {}), undefined);
  });
});

describe('gateway: a leaking configuration', () => {
  it('is refused on reload too (the previous one stays), and the store password counts', async () => {
    const dir = tempDir();
    const admin = { token: 'admin-token-0123456789' };
    const good = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin, servers: { s: { command: 'true' } } });
    const state = openSqliteState(join(dir, 's.db'));
    const audit = new AuditLog(join(dir, 'a.db'));
    const gw = new Gateway({ config: good, state, audit, log: pino({ level: 'silent' }), stateDsn: 'redis://:store-password-1@127.0.0.1:6379/0' });
    try {
      await gw.start();
      const leaky = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin, servers: { s: { command: 'true', env: { PW: 'store-password-1' } } } });
      assert.throws(() => gw.setConfig(leaky), /server "s": the environment variable PW \(from env\).*password of the state store DSN/);
      assert.deepEqual(gw.servers.s, good.servers.s);
      const rejected = new Gateway({ config: leaky, state, audit, log: pino({ level: 'silent' }), stateDsn: 'redis://:store-password-1@127.0.0.1:6379/0' });
      await assert.rejects(rejected.start(), /server "s"/);
      await rejected.stop();
    } finally {
      await gw.stop();
      audit.close();
      await state.close();
    }
  });
});

describe('gateway configuration: an unset variable', () => {
  it('an unset admin-token variable is one message that it is unset, not also "use at least 16 characters"', () => {
    delete process.env.TG_SURELY_UNSET_ADMIN;
    const r = parseGatewayConfig(['admin:', '  token: ${TG_SURELY_UNSET_ADMIN}', 'servers: {}'].join('\n'), '/tmp');
    assert.equal(r.ok, false);
    assert.deepEqual(!r.ok && r.issues.map((i) => [i.pointer, i.message, i.line]), [['/admin/token', 'the environment variable TG_SURELY_UNSET_ADMIN is not set', 2]]);
  });

  it('a value too short for other reasons is still reported as such', () => {
    process.env.TG_SHORT_ADMIN = 'short';
    const r = parseGatewayConfig(['admin:', '  token: ${TG_SHORT_ADMIN}'].join('\n'), '/tmp');
    assert.deepEqual(!r.ok && r.issues.map((i) => i.message), ['use at least 16 characters']);
  });

  it('a state command keeps the skipped admin token when it can be read, to keep it from upstreams', () => {
    process.env.TG_SET_ADMIN = 'admin-token-0123456789';
    const r = parseGatewayConfig(['admin:', '  token: ${TG_SET_ADMIN}'].join('\n'), '/tmp', { forState: true });
    assert.ok(r.ok);
    assert.equal(r.value.admin, undefined);
    assert.equal(r.skippedAdminToken, 'admin-token-0123456789');
  });
});
