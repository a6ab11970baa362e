import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RequestStates, type CallBinding, type Claims } from '../src/input/request-state.js';
import { openMemoryState } from '../src/state/memory.js';
import { openRedisState } from '../src/state/redis.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { TestRedis } from './helpers/redis.js';
import { tempDir } from './helpers/toolgate.js';

const NOW = 1_800_000_000_000;
const call: CallBinding = { grant: 'gr_1', server: 'files', tool: 'delete_file', args: { path: '/srv/a', opts: { force: true } } };
const claims: Claims = { kind: 'upstream', upstream: 'their-state', audit: 'ev-1', round: 1, started: NOW - 5, expiresAt: NOW + 60_000 };

const redis = await TestRedis.start();
after(() => redis.stop());
let prefixes = 0;

/** Two handles on one store (two processes on one SQLite file, two instances on one Redis); memory has only itself. */
const stores: [string, () => [StateStore, StateStore]][] = [
  ['memory', () => { const s = openMemoryState(); return [s, s]; }],
  ['sqlite', () => { const file = join(tempDir(), 'state.db'); return [openSqliteState(file), openSqliteState(file)]; }],
  ['redis', () => { const url = `${redis.url}/0?prefix=rs${process.pid}-${++prefixes}`; return [openRedisState(url), openRedisState(url)]; }],
];

const close = async (pair: [StateStore, StateStore]) => { await pair[0].close(); if (pair[1] !== pair[0]) await pair[1].close(); };
const refusal = (r: Awaited<ReturnType<RequestStates['verify']>>) => ('refusal' in r ? r.refusal.reason : 'ok');

/** The state with one character of its payload changed (still base64url). */
function tamper(state: string): string {
  const i = 'tg1.'.length + 5;
  return state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
}

for (const [name, open] of stores) {
  describe(`signed requestState on the ${name} store`, () => {
    it('is accepted once for its own call, with the claims it was made with; a replay is refused', async () => {
      const pair = open();
      const states = new RequestStates(pair[0].requestStates, () => NOW);
      const state = await states.sign(call, claims);
      const first = await states.verify(state, { ...call, args: { opts: { force: true }, path: '/srv/a' } });
      assert.deepEqual(first, { claims }, 'the same arguments in another key order are the same call');
      assert.equal(refusal(await states.verify(state, call)), 'replayed');
      await close(pair);
    });

    it('refuses a state made for another grant, server, tool or arguments, without spending it', async () => {
      const pair = open();
      const states = new RequestStates(pair[0].requestStates, () => NOW);
      const state = await states.sign(call, { kind: 'approval', approval: 'abcdefghjk', round: 1, started: NOW, expiresAt: NOW + 1000 });
      for (const other of [{ grant: 'gr_2' }, { server: 'db' }, { tool: 'delete_files' }, { args: { path: '/srv/b', opts: { force: true } } }, { args: { path: '/srv/a', opts: { force: false } } }]) {
        const r = await states.verify(state, { ...call, ...other });
        assert.equal(refusal(r), 'other-call', JSON.stringify(other));
      }
      const ok = await states.verify(state, call);
      assert.ok('claims' in ok && ok.claims.kind === 'approval' && ok.claims.approval === 'abcdefghjk', 'the misdirected tries spent nothing');
      await close(pair);
    });

    it('refuses a state that was changed, made with another key, expired or is not one at all', async () => {
      const pair = open();
      let now = NOW;
      const states = new RequestStates(pair[0].requestStates, () => now);
      const state = await states.sign(call, claims);
      assert.equal(refusal(await states.verify(tamper(state), call)), 'tampered');
      assert.equal(refusal(await states.verify(`${state.slice(0, -3)}AAA`, call)), 'tampered', 'a changed MAC');
      const elsewhere = new RequestStates(openMemoryState().requestStates, () => NOW);
      assert.equal(refusal(await states.verify(await elsewhere.sign(call, claims), call)), 'tampered', 'another store signs with another key');
      for (const junk of [undefined, 42, '', 'their-state', 'tg1.', 'tg1.e30', 'tg1.e30.']) assert.notEqual(refusal(await states.verify(junk, call)), 'ok', String(junk));
      now = NOW + 60_000;
      assert.equal(refusal(await states.verify(state, call)), 'expired');
      now = NOW;
      assert.equal(refusal(await states.verify(state, call)), 'ok', 'the refusals spent nothing');
      await close(pair);
    });

    it('is checked by any process on the same state, and used once across all of them', async () => {
      const pair = open();
      const [a, b] = pair.map((s) => new RequestStates(s.requestStates, () => NOW));
      const state = await a.sign(call, claims);
      // Both at once, from both handles: exactly one continues the call.
      const results = await Promise.all([a, b, a, b, b, a].map((s) => s.verify(state, call)));
      assert.equal(results.filter((r) => 'claims' in r).length, 1);
      assert.deepEqual(results.map(refusal).filter((r) => r !== 'ok'), Array(5).fill('replayed'));
      const fromB = await b.sign(call, claims);
      assert.equal(refusal(await a.verify(fromB, call)), 'ok', 'one key for every process on the store');
      await close(pair);
    });
  });
}
