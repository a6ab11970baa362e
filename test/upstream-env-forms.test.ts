import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientEnv, configSecrets, OwnSecrets, secretLeak } from '../src/upstream-env/index.js';

// Issue 23 item 1, second attack: toolgate's secrets matched by value in the forms a real
// configuration writes them (percent-encoded in a URL, base64 in a Basic header, a short URL
// password), and the Slack webhook URL, which is itself the credential.
describe('upstream environment: a store password in the forms a URL carries it', () => {
  // Generated passwords (hosted Redis keys, `openssl rand -base64`) hold +, /, = and @, which a
  // redis:// DSN must percent-encode; the same encoded text is what an operator pastes elsewhere.
  const encoded = 'Rp%40ss%2Fw0rd%2Blong%3D'; // Rp@ss/w0rd+long=
  const dsn = `redis://:${encoded}@127.0.0.1:6379/0?prefix=tg`;

  it('serve: the encoded password in another URL of the same Redis (another database) is refused', () => {
    const secrets = configSecrets({}, dsn, {});
    const leak = secretLeak('app', { command: 'app-server', env: { APP_REDIS_URL: `redis://:${encoded}@127.0.0.1:6379/1` } }, secrets, {});
    assert.ok(leak, 'an upstream given the store password (as the DSN spells it) can rewrite approvals and counters');
    assert.match(leak, /APP_REDIS_URL/);
    assert.ok(!leak.includes(encoded));
  });

  it('serve: the same DSN without toolgate\'s own query parameters is refused', () => {
    const secrets = configSecrets({}, dsn, {});
    assert.ok(secretLeak('app', { command: 'app-server', args: [`redis://:${encoded}@127.0.0.1:6379/0`] }, secrets, {}));
  });

  it('serve: the password encoded another way (lower-case hex, only some characters) is refused', () => {
    const secrets = configSecrets({}, dsn, {});
    assert.ok(secrets.in('redis://:Rp%40ss/w0rd+long=@h:6379/1'));
    assert.ok(secrets.in('x=Rp%40ss%2fw0rd%2blong%3d'));
    assert.ok(secrets.in('Rp@ss/w0rd+long='), 'the decoded password, as written in another tool\'s config');
  });

  it('run: a variable holding the encoded password is not inherited', () => {
    const from = { PATH: '/usr/bin', TOOLGATE_STATE: dsn, APP_REDIS_URL: `redis://:${encoded}@127.0.0.1:6379/1` };
    const env = clientEnv(new OwnSecrets().addOwnVars(from), from);
    assert.equal(env.APP_REDIS_URL, undefined);
    assert.equal(env.PATH, '/usr/bin');
  });

  it('a Redis Cluster DSN (several seed nodes, which URL parsing refuses) has its password kept from upstreams too', () => {
    const cluster = `redis+cluster://app:${encoded}@10.0.0.1:7000,10.0.0.2:7001?prefix=tg`;
    const secrets = configSecrets({}, cluster, {});
    assert.ok(secretLeak('app', { command: 'app-server', env: { APP_REDIS_URL: `redis://:${encoded}@10.0.0.1:7000/0` } }, secrets, {}));
    const from = { PATH: '/usr/bin', TOOLGATE_STATE: cluster, APP_REDIS_PASSWORD: 'Rp@ss/w0rd+long=' };
    assert.equal(clientEnv(new OwnSecrets().addOwnVars(from), from).APP_REDIS_PASSWORD, undefined, 'the decoded password is not inherited');
  });

  it('a short store password is still caught where a URL carries it as a password (":pw@")', () => {
    // Redis accepts any length and toolgate does not ask for 8+; matching it "whole only" lets
    // redis://:s3cr3t@host/1 through.
    const secrets = configSecrets({}, 'redis://:s3cr3t@127.0.0.1:6379/0', {});
    assert.ok(secretLeak('app', { command: 'app-server', env: { APP_REDIS_URL: 'redis://:s3cr3t@127.0.0.1:6379/1' } }, secrets, {}));
    assert.equal(secrets.in('the s3cr3t plan'), undefined, 'outside a URL\'s userinfo a short password is still matched whole only');
  });
});

describe('upstream environment: encoded forms of the admin token', () => {
  const token = 'admin-token-Yv27pLq9Ws41Kd3';
  const secrets = new OwnSecrets().add('admin.token', token);

  it('in a Basic header (base64 of user:token, at any byte offset) and base64url', () => {
    for (const user of ['', 'a', 'ab', 'abc', 'toolgate']) {
      const basic = `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;
      assert.ok(secretLeak('s', { url: 'https://h/mcp', headers: { Authorization: basic } }, secrets), `user ${JSON.stringify(user)}`);
    }
    assert.ok(secrets.in(Buffer.from(`x${token}`).toString('base64url')));
    assert.equal(secrets.in(Buffer.from('admin-token-other-value').toString('base64')), undefined);
  });

  it('percent-encoded in a query string', () => {
    const odd = new OwnSecrets().add('admin.token', 'tok/with+odd=chars&more');
    assert.ok(secretLeak('s', { url: `https://h/mcp?t=${encodeURIComponent('tok/with+odd=chars&more')}` }, odd));
  });

  it('in a server\'s cwd', () => {
    assert.match(secretLeak('s', { command: 'node', cwd: `/srv/${token}` }, secrets, {}) ?? '', /its cwd/);
  });
});

describe('upstream environment: a Slack webhook URL is a secret of toolgate\'s', () => {
  const hook = 'https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx';
  const config = { servers: { a: { command: 'x', approvals: { webhook: { url: hook, secret: 'the-webhook-secret', format: 'slack' } } } } };

  it('the URL, and its secret path, handed to an upstream are refused', () => {
    const secrets = configSecrets(config, undefined, {});
    const leak = secretLeak('b', { command: 'node', env: { SLACK_URL: hook } }, secrets, {});
    assert.match(leak ?? '', /SLACK_URL .*approvals\.webhook\.url of server "a"/);
    assert.ok(secretLeak('b', { command: 'node', args: ['--hook', 'T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx'] }, secrets, {}));
  });

  it('a plain webhook URL is not a secret; a password in one is', () => {
    const plain = configSecrets({ servers: { a: { command: 'x', approvals: { webhook: { url: 'https://hooks.example/in', secret: 'the-webhook-secret' } } } } }, undefined, {});
    assert.equal(plain.in('https://hooks.example/in'), undefined);
    const withPassword = configSecrets({ servers: { a: { command: 'x', approvals: { webhook: { url: 'https://u:hook-pass-123@hooks.example/in', secret: 'the-webhook-secret' } } } } }, undefined, {});
    assert.ok(withPassword.in('hook-pass-123'));
  });
});
