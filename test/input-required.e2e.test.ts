import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cli, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const SERVER = join(import.meta.dirname, 'fixtures', 'input-required-server.mjs');
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

/**
 * An upstream that asks for input (MCP 2026-07-28 input_required), through `toolgate run`, with
 * the client's JSON lines written by hand. Two `run` processes on one state (one SQLite file,
 * one audit log) stand in for two instances of a fleet: a retry made at the other one continues
 * the call there. Until the modern front door is merged this drives the session in its legacy
 * framing; the session does the same for a modern client.
 */
describe('toolgate run: an upstream asks for input; the retry continues the call', () => {
  let dir: string;
  let ran: string;
  let received: string;
  let a: RawSession;
  let b: RawSession;
  const answers = { q: { action: 'accept', content: { ok: true } } };
  const call = (id: number, path: string, extra: Record<string, unknown> = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'confirm_delete', arguments: { path }, ...extra } });

  before(async () => {
    dir = tempDir();
    ran = join(dir, 'ran.log');
    received = join(dir, 'received.log');
    const policy = writePolicy(dir, { version: '1', default: 'allow', tools: { confirm_delete: { limits: [{ counter: 'deletes', window: 'day', max: 2, scope: 'grant' }] } } });
    const env = testEnv(dir, { INPUT_RAN: ran, INPUT_LOG: received });
    const args = ['-p', policy, '--state', `sqlite:${join(dir, 'state.db')}`, '--name', 'files', '--', process.execPath, SERVER];
    a = new RawSession(args, env);
    b = new RawSession(args, env);
    await Promise.all([a.initialize(), b.initialize()]);
  });
  after(async () => { await a?.close(); await b?.close(); });

  it('passes the question on with a signed state, forwards the answer once with the upstream\'s own state, and refuses a replay', async () => {
    a.send(call(1, '/srv/a'));
    const asked = (await a.response(1)).result;
    assert.equal(asked.resultType, 'input_required');
    assert.equal(asked.inputRequests.q.params.message, 'Delete /srv/a?');
    assert.match(asked.requestState, /^tg1\./, 'the client holds toolgate\'s state');

    a.send(call(2, '/srv/a', { inputResponses: answers, requestState: asked.requestState }));
    assert.equal((await a.response(2)).result.content[0].text, 'deleted /srv/a');
    assert.deepEqual(lines(received).at(-1), { name: 'confirm_delete', arguments: { path: '/srv/a' }, inputResponses: answers, requestState: 'srv:/srv/a' });

    a.send(call(3, '/srv/a', { inputResponses: answers, requestState: asked.requestState }));
    const replayed = await a.response(3);
    assert.equal(replayed.error.code, -32602, 'a used state is refused as a protocol error (SEP-2322), not as the call\'s result');
    assert.match(replayed.error.message, /The requestState was already used/);
    assert.equal(lines(ran).length, 1, 'the call ran once');
  });

  it('a retry at another process on the same state continues the call there, uncharged; the limit shows one charge per call', async () => {
    a.send(call(4, '/srv/b'));
    const asked = (await a.response(4)).result;
    b.send(call(5, '/srv/b', { inputResponses: answers, requestState: asked.requestState }));
    assert.equal((await b.response(5)).result.content[0].text, 'deleted /srv/b');
    // Two calls so far (each charged once, whatever its rounds): the limit of 2 a day refuses a third.
    b.send(call(6, '/srv/c'));
    assert.match((await b.response(6)).result.content[0].text, /Limit reached: 2 calls per day/);
    assert.equal(lines(ran).length, 2);
  });

  it('one audit row per call, with its rounds', async () => {
    await a.close();
    await b.close();
    const r = await cli(['audit', '--json', '--tool', 'confirm_delete'], testEnv(dir));
    assert.equal(r.code, 0, r.stderr);
    const rows = (JSON.parse(r.stdout) as { decision: string; outcome: string | null; rule: string }[]).filter((row) => row.decision === 'allow');
    assert.deepEqual(rows.map((row) => row.outcome).sort(), ['result after 2 rounds', 'result after 2 rounds'], JSON.stringify(rows));
  });
});
