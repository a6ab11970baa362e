import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FIXTURES, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * SPEC section 9: `__proto__` keys get no denied call to a lenient server. Toolgate reads an own
 * `__proto__` argument as a plain key (so args.path is missing and a deny_if on it does not
 * hold), and forwards it; a server that merges defaults with Object.assign (fixture
 * test/fixtures/assign-server.mjs, copy from /tmp/attack2-tests/fixtures) then reads
 * args.path through the prototype the key set.
 */
const ASSIGN = join(FIXTURES, 'assign-server.mjs');
const POLICY = {
  version: '1', default: 'deny',
  tools: { read_file: { deny_if: [{ conditions: [{ path: 'args.path', op: 'starts_with', value: '/etc' }], on_deny: 'not /etc' }] } },
};

describe('__proto__ in arguments', () => {
  let dir: string;
  let raw: RawSession;
  const ran = (): { ran: string; path: string | null; id: unknown }[] => {
    try { return readFileSync(join(dir, 'ran.log'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; }
  };

  before(async () => {
    dir = tempDir();
    raw = new RawSession(['-p', writePolicy(dir, POLICY), '--state', 'memory:', '--', process.execPath, ASSIGN], testEnv(dir, { LENIENT_RAN: join(dir, 'ran.log') }));
    await raw.initialize();
  });
  after(() => raw.close());

  it('the policy denies /etc as a plain argument (the rule works)', async () => {
    const r = await raw.request('plain', 'tools/call', { name: 'read_file', arguments: { path: '/etc/shadow' } });
    assert.match(r.result.content[0].text, /^\[POLICY DENIED\]/);
  });

  it('an own "__proto__" argument never gets /etc read', async () => {
    // Written as text: an object literal's __proto__ would set the prototype here, not send the key.
    raw.send('{"jsonrpc":"2.0","id":"proto","method":"tools/call","params":{"name":"read_file","arguments":{"__proto__":{"path":"/etc/shadow"}}}}');
    await raw.response('proto');
    assert.deepEqual(ran().filter((r) => r.path?.startsWith('/etc')), [], 'the server read /etc through the prototype');
  });
});
