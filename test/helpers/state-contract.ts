import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { openRedisState } from '../../src/state/redis.js';
import { KILLED, type Approval, type Charge, type StateStore } from '../../src/state/types.js';
import { until } from './approvals.js';

/*
 * The contract every state store passes (test/state.test.ts runs it on memory, SQLite and a Redis
 * node; test/redis-cluster.test.ts on a Redis Cluster), and what Redis instances sharing one
 * keyspace must do together.
 */

export const NOW = 1_800_000_000_000;
export const approval = (id: string, binding = `b-${id}`, extra: Partial<Approval> = {}): Approval => ({
  id, server: 's', grant: 'g', session: 'sess', tool: 'delete_file', args: { path: '/x', token: '***' }, binding,
  rule: '/tools/delete_file/action', reason: 'needs approval', via: ['cli'], requestedAt: NOW, expiresAt: NOW + 60_000,
  validForMs: 600_000, status: 'pending', ...extra,
});
export const charge = (key: string, max: number, amount = 1, expiresAt = NOW + 60_000): Charge => ({ key, amount, max, expiresAt });

export function storeContract(name: string, open: () => StateStore): void {
  describe(`${name} state store`, () => {
    it('keeps one requestState signing key and spends each nonce once (src/input/request-state.ts; the rest in test/request-state.test.ts)', async () => {
      const s = open();
      const key = await s.requestStates.signingKey();
      assert.equal(Buffer.from(key, 'base64url').length, 32);
      assert.equal(await s.requestStates.signingKey(), key);
      assert.equal(await s.requestStates.spend('n-1', NOW + 60_000, NOW), true);
      assert.equal(await s.requestStates.spend('n-1', NOW + 60_000, NOW), false);
      assert.equal(await s.requestStates.spend('n-2', NOW + 60_000, NOW), true);
      await s.close();
    });

    it('remembers the flow roles an agent touched until they expire, the latest per role, server and tool (src/flows)', async () => {
      const s = open();
      await s.flows.touch('agent:a', [{ role: 'private', tool: 'read_file', server: 'fs', at: NOW }], NOW + 3_600_000);
      await s.flows.touch('agent:a', [{ role: 'untrusted', tool: 'fetch', server: 'web', at: NOW + 1000 }, { role: 'egress', tool: 'fetch', server: 'web', at: NOW + 1000 }], NOW + 60_000);
      await s.flows.touch('agent:a', [{ role: 'private', tool: 'read_file', server: 'fs', at: NOW + 2000 }], NOW + 3_600_000);
      await s.flows.touch('agent:b', [{ role: 'private', tool: 'read_file', server: 'fs', at: NOW }], NOW + 3_600_000);
      assert.deepEqual(await s.flows.touched('agent:a', NOW + 2000), [
        { role: 'egress', tool: 'fetch', server: 'web', at: NOW + 1000 },
        { role: 'untrusted', tool: 'fetch', server: 'web', at: NOW + 1000 },
        { role: 'private', tool: 'read_file', server: 'fs', at: NOW + 2000 },
      ]);
      assert.deepEqual((await s.flows.touched('agent:a', NOW + 60_000)).map((t) => t.role), ['private'], 'the shorter-lived touches are gone');
      assert.deepEqual(await s.flows.touched('agent:c', NOW), [], 'another agent touched nothing');
      assert.deepEqual(await s.flows.touched('agent:b', NOW + 3_600_000), [], 'gone at its expiry');
      await s.close();
    });

    it('keeps every server of a multi-server grant (issue 27), and a one-server grant has none listed', async () => {
      const s = open();
      await s.grants.create({ id: 'gr_m', label: 'm', server: 'a', servers: ['a', 'b'], tags: ['agent:x'], createdAt: new Date(NOW).toISOString() }, 'hm');
      await s.grants.create({ id: 'gr_o', label: 'o', server: 'a', tags: [], createdAt: new Date(NOW).toISOString() }, 'ho');
      assert.deepEqual((await s.grants.byTokenHash('hm'))?.servers, ['a', 'b']);
      assert.equal((await s.grants.byTokenHash('ho'))?.servers, undefined);
      assert.deepEqual((await s.grants.list()).find((g) => g.id === 'gr_m')?.servers, ['a', 'b']);
      await s.close();
    });

    it('takes up to max and no more', async () => {
      const s = open();
      for (let i = 0; i < 3; i++) assert.equal(await s.counters.reserve([charge('k', 3)], NOW), -1);
      assert.equal(await s.counters.reserve([charge('k', 3)], NOW), 0);
      assert.equal(await s.counters.value('k', NOW), 3);
      await s.close();
    });

    it('takes every charge or none, and reports which one failed', async () => {
      const s = open();
      await s.counters.reserve([charge('b', 1)], NOW);
      assert.equal(await s.counters.reserve([charge('a', 5), charge('b', 1), charge('c', 5)], NOW), 1);
      assert.equal(await s.counters.value('a', NOW), 0, 'nothing was taken');
      assert.equal(await s.counters.value('c', NOW), 0);
      await s.close();
    });

    it('counts two charges on the same key together', async () => {
      const s = open();
      assert.equal(await s.counters.reserve([charge('k', 3, 2), charge('k', 3, 2)], NOW), 1);
      assert.equal(await s.counters.reserve([charge('k', 4, 2), charge('k', 4, 2)], NOW), -1);
      assert.equal(await s.counters.value('k', NOW), 4);
      await s.close();
    });

    it('release gives units back, never below zero', async () => {
      const s = open();
      await s.counters.reserve([charge('k', 2, 2)], NOW);
      await s.counters.release([charge('k', 2, 2)]);
      assert.equal(await s.counters.value('k', NOW), 0);
      await s.counters.release([charge('k', 2, 5)]);
      assert.equal(await s.counters.value('k', NOW), 0);
      await s.close();
    });

    it('a counter is empty again after its window ends', async () => {
      const s = open();
      await s.counters.reserve([charge('k', 1, 1, NOW + 1000)], NOW);
      assert.equal(await s.counters.reserve([charge('k', 1, 1, NOW + 1000)], NOW + 500), 0);
      assert.equal(await s.counters.reserve([charge('k', 1, 1, NOW + 2000)], NOW + 1000), -1);
      assert.equal(await s.counters.value('k', NOW + 1500), 1);
      await s.close();
    });

    it('1,000 concurrent reservations against max 100 grant exactly 100', async () => {
      const s = open();
      const results = await Promise.all(Array.from({ length: 1000 }, () => s.counters.reserve([charge('hot', 100)], NOW)));
      assert.equal(results.filter((r) => r === -1).length, 100);
      assert.equal(await s.counters.value('hot', NOW), 100);
      await s.close();
    });

    it('pins: stored per server, replaced whole', async () => {
      const s = open();
      assert.equal(await s.pins.get('github'), null);
      await s.pins.set('github', { create_issue: 'aa', delete_repo: 'bb' });
      await s.pins.set('stripe', { create_refund: 'cc' });
      assert.deepEqual(await s.pins.get('github'), { create_issue: 'aa', delete_repo: 'bb' });
      await s.pins.set('github', { create_issue: 'dd' });
      assert.deepEqual(await s.pins.get('github'), { create_issue: 'dd' });
      assert.deepEqual(await s.pins.get('stripe'), { create_refund: 'cc' });
      await s.close();
    });

    it('OAuth records: expire, are taken once, and are counted by prefix', async () => {
      const s = open();
      await s.oauth.put('code:a', 'one', NOW + 1000);
      await s.oauth.put('client:pending:x', '{}', NOW + 1000);
      await s.oauth.put('client:pending:y', '{}', NOW - 1);
      await s.oauth.put('client:ok:z', '{}', NOW + 1000);
      await s.oauth.put('code:b', 'two', NOW + 1000);
      assert.equal(await s.oauth.get('code:a', NOW), 'one');
      assert.equal(await s.oauth.get('code:b', NOW + 1000), null, 'expired at its expiry');
      assert.equal(await s.oauth.take('code:b', NOW + 1000), null, 'an expired code cannot be taken');
      assert.equal(await s.oauth.count('client:pending:', NOW), 1, 'live keys with the prefix only');
      const takes = await Promise.all([s.oauth.take('code:a', NOW), s.oauth.take('code:a', NOW)]);
      assert.deepEqual(takes.sort(), ['one', null].sort(), 'a code is taken once');
      await s.oauth.delete('client:ok:z');
      assert.equal(await s.oauth.get('client:ok:z', NOW), null);
      await s.close();
    });

    it('a grant rotated with a new expiry keeps its id and takes the expiry', async () => {
      const s = open();
      await s.grants.create({ id: 'gr_r', label: 'r', server: 's', tags: [], createdAt: new Date(NOW).toISOString(), expiresAt: new Date(NOW).toISOString() }, 'h1');
      assert.equal(await s.grants.rotate('gr_r', 'h2', new Date(NOW + 3_600_000).toISOString()), true);
      assert.equal((await s.grants.byTokenHash('h2'))?.expiresAt, new Date(NOW + 3_600_000).toISOString());
      assert.equal(await s.grants.rotate('gr_r', 'h3'), true);
      assert.equal((await s.grants.byTokenHash('h3'))?.expiresAt, new Date(NOW + 3_600_000).toISOString(), 'no expiry given: kept');
      await s.close();
    });

    it('kill switch: per server and gateway-wide', async () => {
      const s = open();
      assert.equal(await s.flags.killedFor('github'), null);
      await s.flags.setKillSwitch('github', true, 'incident');
      assert.equal(await s.flags.killedFor('github'), 'github');
      assert.equal(await s.flags.killedFor('stripe'), null);
      await s.flags.setKillSwitch('*', true);
      assert.equal(await s.flags.killedFor('stripe'), '*');
      await s.flags.setKillSwitch('*', false);
      await s.flags.setKillSwitch('github', false);
      assert.equal(await s.flags.killedFor('github'), null);
      assert.equal((await s.flags.listKillSwitches()).length, 2);
      await s.close();
    });

    it('reserveUnlessKilled reads its own store\'s kill switch: on, nothing is taken', async () => {
      const s = open();
      assert.equal(s.counters.flags, s.flags);
      const take = (server: string, ...charges: Charge[]) => s.counters.reserveUnlessKilled!(server, charges, NOW);
      assert.equal(await take('github', charge('k', 2)), -1);
      await s.flags.setKillSwitch('github', true);
      assert.equal(await take('github', charge('k', 2)), KILLED);
      assert.equal(await take('stripe', charge('k', 2)), -1, 'another server is not stopped');
      assert.equal(await take('stripe', charge('k', 2)), 0, 'a limit still answers with its index');
      await s.flags.setKillSwitch('*', true);
      assert.equal(await take('stripe', charge('other', 2)), KILLED);
      await s.flags.setKillSwitch('*', false);
      await s.flags.setKillSwitch('github', false);
      assert.equal(await take('github', charge('other', 2)), -1);
      assert.equal(await s.counters.value('k', NOW), 2);
      assert.equal(await s.counters.value('other', NOW), 1, 'the killed calls took nothing');
      await s.close();
    });

    it('concurrent reservations are decided in arrival order, each all or nothing', async () => {
      const s = open();
      await s.flags.setKillSwitch('stopped', true);
      const a = (amount: number) => charge('a', 4, amount);
      const b = (amount: number) => charge('b', 3, amount);
      // Made in one event-loop turn, so a store that commits them together (SQLite) does here.
      const results = await Promise.all([
        s.counters.reserve([a(1), b(2)], NOW),
        s.counters.reserve([a(1), b(2)], NOW), // b would pass 3: a is not taken either
        s.counters.reserveUnlessKilled!('stopped', [a(1)], NOW), // killed: nothing taken
        s.counters.reserve([a(3), b(1)], NOW), // sees a = 1, not 2 or 3
        s.counters.reserve([a(1)], NOW),
        s.counters.reserveUnlessKilled!('running', [b(0), a(0)], NOW),
      ]);
      assert.deepEqual(results, [-1, 1, KILLED, -1, 0, -1]);
      assert.equal(await s.counters.value('a', NOW), 4);
      assert.equal(await s.counters.value('b', NOW), 3);
      await s.close();
    });

    it('approvals: created pending, decided exactly once, refused after expiry', async () => {
      const s = open();
      await s.approvals.create(approval('a1'));
      await s.approvals.create(approval('a2'));
      assert.deepEqual((await s.approvals.get('a1'))?.args, { path: '/x', token: '***' });
      assert.equal((await s.approvals.list({ status: 'pending' })).length, 2);
      const won = await s.approvals.decide('a1', { status: 'approved', by: 'cli:alice', reason: 'ok', at: NOW + 1000 });
      assert.equal(won?.status, 'approved');
      assert.equal(won?.validUntil, NOW + 1000 + 600_000);
      assert.equal(await s.approvals.decide('a1', { status: 'denied', by: 'cli:bob', at: NOW + 1001 }), null, 'decided once');
      assert.equal((await s.approvals.get('a1'))?.decidedBy, 'cli:alice');
      assert.equal(await s.approvals.decide('a2', { status: 'approved', by: 'cli:alice', at: NOW + 60_000 }), null, 'too late to approve');
      assert.equal(await s.approvals.decide('nope', { status: 'approved', by: 'x', at: NOW }), null);
      await assert.rejects(async () => s.approvals.create(approval('a1')), 'ids are unique');
      await s.close();
    });

    it('approvals: an approved call is consumed exactly once, within its validity', async () => {
      const s = open();
      await s.approvals.create(approval('c1'));
      assert.equal(await s.approvals.consume('c1', NOW), false, 'pending cannot be used');
      await s.approvals.decide('c1', { status: 'approved', by: 'cli:a', at: NOW });
      const tries = await Promise.all(Array.from({ length: 20 }, () => s.approvals.consume('c1', NOW + 5)));
      assert.equal(tries.filter(Boolean).length, 1);
      assert.equal((await s.approvals.get('c1'))?.status, 'used');
      await s.approvals.create(approval('c2'));
      await s.approvals.decide('c2', { status: 'approved', by: 'cli:a', at: NOW });
      assert.equal(await s.approvals.consume('c2', NOW + 600_000), false, 'validity over');
      await s.close();
    });

    it('approvals: findLive finds the pending or approved approval of a binding, newest first', async () => {
      const s = open();
      await s.approvals.create(approval('f1', 'same'));
      assert.equal((await s.approvals.findLive('same', NOW))?.id, 'f1');
      assert.equal(await s.approvals.findLive('same', NOW + 60_000), null, 'expired pending');
      assert.equal(await s.approvals.findLive('other', NOW), null);
      await s.approvals.decide('f1', { status: 'denied', by: 'cli:a', at: NOW });
      assert.equal(await s.approvals.findLive('same', NOW), null, 'denied is not live');
      await s.approvals.create(approval('f2', 'same', { requestedAt: NOW + 1 }));
      await s.approvals.decide('f2', { status: 'approved', by: 'cli:a', at: NOW + 2 });
      assert.equal((await s.approvals.findLive('same', NOW + 3))?.status, 'approved');
      await s.approvals.consume('f2', NOW + 4);
      assert.equal(await s.approvals.findLive('same', NOW + 5), null, 'used is not live');
      await s.close();
    });

    it('approvals: expire times out pending and marks unused approvals, each once', async () => {
      const s = open();
      await s.approvals.create(approval('e1'));
      await s.approvals.create(approval('e2'));
      await s.approvals.decide('e2', { status: 'approved', by: 'cli:a', at: NOW });
      assert.deepEqual(await s.approvals.expire(NOW + 1), []);
      const first = await s.approvals.expire(NOW + 600_001);
      assert.deepEqual(first.map((a) => `${a.id}:${a.status}`).sort(), ['e1:timeout', 'e2:unused']);
      assert.deepEqual(await s.approvals.expire(NOW + 700_000), [], 'only once');
      assert.equal((await s.approvals.get('e1'))?.decidedBy, 'toolgate');
      await s.close();
    });

    it('approvals: watchers hear of every create and transition', async () => {
      const s = open();
      const heard: string[] = [];
      let wake: () => void = () => {};
      const stop = s.approvals.watch((a) => { heard.push(`${a.id}:${a.status}`); wake(); });
      const until = (n: number) => new Promise<void>((r) => { wake = () => { if (heard.length >= n) r(); }; wake(); });
      await s.approvals.create(approval('w1'));
      await until(1);
      await s.approvals.decide('w1', { status: 'approved', by: 'cli:a', at: NOW });
      await until(2);
      await s.approvals.consume('w1', NOW);
      await until(3);
      assert.deepEqual(heard, ['w1:pending', 'w1:approved', 'w1:used']);
      stop();
      await s.close();
    });
  });
}

type RedisState = ReturnType<typeof openRedisState>;

/** `fleet(n)`: n Redis stores on one fresh prefix of one Redis (a node or a cluster). */
export function redisInstancesContract(name: string, fleet: (n: number) => RedisState[]): void {
  describe(name, () => {
    /** Resolves when `store` hears of the next change any instance publishes. */
    const nextChange = (store: RedisState) => new Promise<void>((resolve) => store.link.onChange(() => resolve(), () => {}));

    it('1,000 concurrent reservations against max 100 across three instances grant exactly 100', async () => {
      const three = fleet(3);
      const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => three[i % 3].counters.reserve([charge('hot', 100)], NOW)));
      assert.equal(results.filter((r) => r === -1).length, 100);
      assert.equal(await three[1].counters.value('hot', NOW), 100);
      await Promise.all(three.map((s) => s.close()));
    });

    it('windows follow the Redis clock, not the callers\' clocks', async () => {
      const [a, b] = fleet(2);
      const hour = 3_600_000;
      const windowed = (): Charge => ({ key: 'ignored', amount: 1, max: 2, expiresAt: 0, window: { name: 'calls', ms: hour } });
      const first = windowed();
      assert.equal(await a.counters.reserve([first], 0), -1, 'a caller whose clock says 1970');
      assert.equal(await b.counters.reserve([windowed()], Date.now() + 5 * hour), -1, 'a caller five hours ahead');
      assert.equal(await a.counters.reserve([windowed()], Date.now()), 0, 'both counted in the same window');
      assert.ok(first.expiresAt > Date.now() - 60_000 && first.expiresAt % hour === 0, 'the window end comes back from Redis');
      await b.counters.release([first]);
      assert.equal(await a.counters.reserve([windowed()], Date.now()), -1, 'a release finds the window it was taken from');
      const ttl = await a.link.client.pttl(a.link.key('c', 'calls'));
      assert.ok(ttl > 0 && ttl <= hour + 1000, `the key expires after its window (ttl ${ttl})`);
      await Promise.all([a.close(), b.close()]);
    });

    it('a kill switch or a revocation on one instance is seen on the next read of another', async () => {
      const [a, b] = fleet(2);
      await a.grants.create({ id: 'gr_1', label: 'a', server: 's', tags: ['x'], createdAt: new Date(NOW).toISOString() }, 'hash-1');
      assert.equal((await b.grants.byTokenHash('hash-1'))?.id, 'gr_1');
      assert.equal(await b.flags.killedFor('s'), null);
      let heard = nextChange(b);
      assert.equal(await a.grants.revoke('gr_1', new Date(NOW).toISOString()), true);
      await heard;
      assert.ok((await b.grants.byTokenHash('hash-1'))?.revokedAt, 'revoked on a, refused on b');
      assert.equal(await b.grants.revoke('gr_1', new Date(NOW).toISOString()), false, 'only once');
      heard = nextChange(a);
      await b.flags.setKillSwitch('s', true, 'incident');
      await heard;
      assert.equal(await a.flags.killedFor('s'), 's', 'switched on b, stopped on a');
      assert.deepEqual((await a.flags.listKillSwitches()).map((k) => [k.scope, k.on, k.reason]), [['s', true, 'incident']]);
      await Promise.all([a.close(), b.close()]);
    });
    it('a revocation or kill switch whose change message never arrives still applies within a second', async () => {
      const [a, b] = fleet(2);
      await a.grants.create({ id: 'gr_2', label: 'a', server: 's', tags: [], createdAt: new Date(NOW).toISOString() }, 'hash-lost');
      assert.equal((await b.grants.byTokenHash('hash-lost'))?.revokedAt, undefined);
      assert.equal(await b.flags.killedFor('quiet'), null);
      // Written behind the stores' backs, with no message on the channel: only the re-read can find them.
      await a.link.client.hset(a.link.key('grants', 'revoked'), 'gr_2', new Date(NOW).toISOString());
      await a.link.client.hset(a.link.key('kill'), 'quiet', JSON.stringify({ scope: 'quiet', on: true, at: new Date(NOW).toISOString() }));
      // The contract is a second; the deadline leaves room for a loaded machine but not for the old 5 s cycle.
      await until(async () => (await b.grants.byTokenHash('hash-lost'))?.revokedAt, 'the revocation to be re-read', 3000);
      await until(async () => (await b.flags.killedFor('quiet')) === 'quiet', 'the kill switch to be re-read', 3000);
      await Promise.all([a.close(), b.close()]);
    });
    it('an approval decided on another instance is decided once and heard where the call is held', async () => {
      const [holder, b, c] = fleet(3);
      const decided = new Promise<string>((resolve) => {
        const stop = holder.approvals.watch((a) => { if (a.id === 'r1' && a.status !== 'pending') { stop(); resolve(`${a.status} by ${a.decidedBy}`); } });
      });
      await holder.approvals.create(approval('r1'));
      const [x, y] = await Promise.all([
        b.approvals.decide('r1', { status: 'approved', by: 'cli:b', at: NOW }),
        c.approvals.decide('r1', { status: 'denied', by: 'api:c', at: NOW }),
      ]);
      assert.equal([x, y].filter(Boolean).length, 1, 'exactly one decision wins');
      const winner = (x ?? y)!;
      assert.equal(await decided, `${winner.status} by ${winner.decidedBy}`);
      await Promise.all([holder.close(), b.close(), c.close()]);
    });
  });
}
