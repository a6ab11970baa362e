// Issue 23 #20: the README's zero-config demo as a new user runs it — every line piped at once — and what a denial then says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { denialText, LENIENT, RawSession, tempDir, testEnv } from './helpers/toolgate.js';

const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '1' } } };

describe('toolgate run without -p, fed by a pipe', () => {
  it('notifications/initialized before the initialize answer still gets the tools listed and the recommended policy applied', async () => {
    const session = new RawSession(['--', process.execPath, LENIENT], testEnv(tempDir()));
    try {
      // All at once, as printf | toolgate run does: the client does not wait for the initialize answer.
      session.send(INIT);
      session.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const echo = session.response(2);
      session.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } });
      const answer = await echo;
      assert.equal(denialText(answer.result), undefined, JSON.stringify(answer));
    } finally {
      await session.close();
    }
  });

  it('a tool the server did not list is denied with what to do when there is no policy file', async () => {
    const session = new RawSession(['--', process.execPath, LENIENT], testEnv(tempDir()));
    try {
      await session.initialize();
      const answer = await session.request(2, 'tools/call', { name: 'no_such_tool', arguments: {} });
      const text = denialText(answer.result) ?? '';
      assert.match(text, /No policy file was given, and toolgate's recommended policy for this server has no rule for "no_such_tool"/);
      assert.match(text, /toolgate policy recommend -- SERVER COMMAND… > policy\.json/);
      assert.doesNotMatch(text, /under "tools" in the policy/);
    } finally {
      await session.close();
    }
  });
});
