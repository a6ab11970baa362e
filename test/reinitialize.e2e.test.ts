import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { initialized } from './helpers/session.js';
import { LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Issue 23 item 14 ("version downgrade tricks"): the negotiated version decides which methods are
 * forwarded and whether batches are accepted, and a lenient server echoes whatever version the
 * client asks for. Streamable HTTP refuses a second initialize on a session ("Server already
 * initialized"); over stdio toolgate forwards it and adopts the new answer, so a client can
 * re-negotiate a 2025-06-18 session down to 2025-03-26 (batches on) mid-session. The same rule on
 * every transport: a second initialize is refused and never reaches the server.
 */
describe('toolgate run: initialize once per session', () => {
  it('a second initialize is refused and not forwarded; batches stay refused under 2025-06-18', async () => {
    const dir = tempDir();
    const seen = join(dir, 'seen.log');
    const raw = new RawSession(['-p', writePolicy(dir, { version: '1', default: 'allow' }), '--state', 'memory:', '--', process.execPath, LENIENT], testEnv(dir, { LENIENT_LOG: seen }));
    try {
      await raw.initialize(); // 2025-06-18
      const again = await raw.request('init-2', 'initialize', { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } });
      assert.ok(again.error, `a second initialize was answered by the server: ${JSON.stringify(again)}`);
      const initializes = readFileSync(seen, 'utf8').split('\n').filter((l) => l.includes('"initialize"'));
      assert.equal(initializes.length, 1, 'the server saw a second initialize');
      raw.send([{ jsonrpc: '2.0', id: 'b1', method: 'ping' }]);
      const answer = await raw.waitFor((m) => Array.isArray(m) || (m?.id === null && m?.error));
      assert.ok(!Array.isArray(answer), 'a batch was accepted on a 2025-06-18 session');
    } finally {
      await raw.close();
    }
  });
});

describe('initialize once per session; the version comes as a date', () => {
  it('a second initialize is refused and never forwarded', () => {
    const { s, toServer, answer } = initialized('2025-06-18');
    s.fromClient({ jsonrpc: '2.0', id: 'again', method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    assert.deepEqual(toServer, []);
    assert.equal(answer('again')?.error?.code, -32600);
    assert.equal(s.protocolVersion, '2025-06-18');
  });

  for (const version of ['', 'latest', '2025-03-26T00:00']) {
    it(`a server answering protocolVersion ${JSON.stringify(version)} gets the newest revision: batches stay refused`, () => {
      const { s, toServer, toClient } = initialized(version);
      assert.equal(s.protocolVersion, '2025-11-25');
      s.fromClient([{ jsonrpc: '2.0', id: 'b1', method: 'ping' }]);
      assert.deepEqual(toServer, []);
      assert.equal((toClient.at(-1)?.error as { code: number } | undefined)?.code, -32600);
    });
  }
});
