import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { openMemoryState } from '../src/state/memory.js';
import { openRedisState } from '../src/state/redis.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { openState } from '../src/state/index.js';
import { KILLED, type Approval, type Charge, type StateStore } from '../src/state/types.js';
import { TestRedis } from './helpers/redis.js';
import { ROOT, tempDir } from './helpers/toolgate.js';

const run = promisify(execFile);
const NOW = 1_800_000_000_000;
const approval = (id: string, binding = `b-${id}`, extra: Partial<Approval> = {}): Approval => ({
  id, server: 's', grant: 'g', session: 'sess', tool: 'delete_file', args: { path: '/x', token: '***' }, binding,
  rule: '/tools/delete_file/action', reason: 'needs approval', via: ['cli'], requestedAt: NOW, expiresAt: NOW + 60_000,
  validForMs: 600_000, status: 'pending', ...extra,
});
const charge = (key: string, max: number, amount = 1, expiresAt = NOW + 60_000): Charge => ({ key, amount, max, expiresAt });

const redis = await TestRedis.start();
after(() => redis.stop());
let prefixes = 0;
/** Each store on Redis gets a key prefix of its own, so tests sharing one server share nothing. */
const freshPrefix = () => `t${process.pid}-${++prefixes}`;

/** The contract every state store passes. */
const stores: [string, () => StateStore][] = [
  ['memory', () => openMemoryState()],
  ['sqlite', () => openSqliteState(join(tempDir(), 'state.db'))],
  ['redis', () => openRedisState(`${redis.url}/0?prefix=${freshPrefix()}`)],
  // What openState gives: sessions' counters in memory in front of the shared store.
  ['sqlite (openState)', () => openState(`sqlite:${join(tempDir(), 'state.db')}`)],
  ['redis (openState)', () => openState(`${redis.url}/0?prefix=${freshPrefix()}`)],
];

for (const [name, open] of stores) {
  describe(`${name} state store`, () => {
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

describe("a session's counters in memory, in front of a shared store", () => {
  const local = (key: string, max: number, amount = 1): Charge => ({ ...charge(key, max, amount), local: true });
  const shared: [string, () => StateStore][] = [
    ['sqlite', () => openState(`sqlite:${join(tempDir(), 'state.db')}`)],
    ['redis', () => openState(`${redis.url}/0?prefix=${freshPrefix()}`)],
  ];
  for (const [name, open] of shared) {
    it(`${name}: takes a call's local and shared charges all or none, naming the one that failed`, async () => {
      const s = open();
      assert.equal(await s.counters.reserve([charge('g', 2), local('sess', 1)], NOW), -1);
      assert.equal(await s.counters.reserve([charge('g', 2), local('sess', 1)], NOW), 1, 'the session limit');
      assert.equal(await s.counters.value('g', NOW), 1, 'the shared charge was not taken');
      assert.equal(await s.counters.reserve([local('sess2', 5), charge('g', 1), local('sess3', 5)], NOW), 1, 'the shared limit, by its own index');
      assert.equal(await s.counters.value('sess2', NOW), 0, 'local charges given back');
      assert.equal(await s.counters.value('sess3', NOW), 0);
      await s.counters.release([charge('g', 2), local('sess', 1)]);
      assert.equal(await s.counters.value('sess', NOW), 0);
      assert.equal(await s.counters.value('g', NOW), 0);
      await s.close();
    });
  }

  for (const [name, open] of shared) {
    it(`${name}: the kill switch is read in the shared reservation, also when every charge is local`, async () => {
      const s = open();
      await s.flags.setKillSwitch('srv', true);
      assert.equal(await s.counters.reserveUnlessKilled!('srv', [local('sess', 5)], NOW), KILLED);
      assert.equal(await s.counters.reserveUnlessKilled!('srv', [local('sess', 5), charge('g', 5)], NOW), KILLED);
      assert.equal(await s.counters.value('sess', NOW), 0, 'nothing taken');
      assert.equal(await s.counters.value('g', NOW), 0);
      assert.equal(await s.counters.reserveUnlessKilled!('other', [local('sess', 5), charge('g', 5)], NOW), -1);
      assert.equal(await s.counters.value('sess', NOW), 1);
      await s.close();
    });
  }

  it('keeps local counters out of the shared file: another process sees only the shared ones', async () => {
    const file = join(tempDir(), 'split.db');
    const s = openState(`sqlite:${file}`);
    assert.equal(await s.counters.reserve([charge('shared', 5, 2), local('mine', 5, 3)], NOW), -1);
    const other = openSqliteState(file);
    assert.equal(await other.counters.value('shared', NOW), 2);
    assert.equal(await other.counters.value('mine', NOW), 0);
    assert.equal(await s.counters.value('mine', NOW), 3);
    await Promise.all([s.close(), other.close()]);
  });

  it('gives local charges back when the shared store fails', async () => {
    const { LocalFirstCounters } = await import('../src/state/local-counters.js');
    const broken = new LocalFirstCounters({ reserve: () => { throw new Error('disk I/O error'); }, release: async () => {}, value: async () => 0 });
    assert.throws(() => broken.reserve([local('sess', 1), charge('g', 5)], NOW), /disk I\/O error/);
    const rejecting = new LocalFirstCounters({ reserve: async () => { throw new Error('redis gone'); }, release: async () => {}, value: async () => 0 });
    await assert.rejects(async () => rejecting.reserve([local('sess', 1), charge('g', 5)], NOW), /redis gone/);
    for (const c of [broken, rejecting]) assert.equal(await c.value('sess', NOW), 0, 'the session unit is back');
  });
});

describe('sqlite state across processes', () => {
  it('two processes on one file together never exceed the limit', async () => {
    const file = join(tempDir(), 'shared.db');
    openSqliteState(file).close();
    const worker = join(ROOT, 'test/helpers/reserve-worker.ts');
    const [a, b] = await Promise.all([
      run(process.execPath, ['--import', 'tsx', worker, file, '400', '500'], { cwd: ROOT }),
      run(process.execPath, ['--import', 'tsx', worker, file, '400', '500'], { cwd: ROOT }),
    ]);
    assert.equal(Number(a.stdout) + Number(b.stdout), 500);
  });

  it('two processes committing many reservations at a time never exceed the limit either', async () => {
    const file = join(tempDir(), 'shared-batches.db');
    openSqliteState(file).close();
    const worker = join(ROOT, 'test/helpers/reserve-worker.ts');
    // 50 at a time: each process commits them as groups, interleaved with the other's.
    const [a, b] = await Promise.all([
      run(process.execPath, ['--import', 'tsx', worker, file, '400', '500', '50'], { cwd: ROOT }),
      run(process.execPath, ['--import', 'tsx', worker, file, '400', '500', '50'], { cwd: ROOT }),
    ]);
    assert.equal(Number(a.stdout) + Number(b.stdout), 500);
  });

  it('under load a turn\'s first reservation joins the turn\'s commit; once quiet it is committed at once again; the limit holds throughout', async () => {
    const s = openSqliteState(join(tempDir(), 'busy.db'));
    const take = () => s.counters.reserve([charge('k', 5)], NOW);
    const turn = () => new Promise((r) => setImmediate(r));
    const busy = [take(), take(), take()];
    assert.equal(typeof busy[0], 'number', 'a quiet store commits the first at once');
    assert.ok(busy[1] instanceof Promise && busy[2] instanceof Promise);
    await turn();
    const next = [take(), take()];
    assert.ok(next[0] instanceof Promise, 'after a turn of several, the first waits for the turn\'s commit');
    await turn();
    const single = take();
    assert.ok(single instanceof Promise, 'the turn before brought two');
    await turn();
    const quiet = take();
    assert.equal(typeof quiet, 'number', 'a turn of one: quiet again');
    assert.deepEqual(await Promise.all([...busy, ...next, single, quiet]), [-1, -1, -1, -1, -1, 0, 0]);
    assert.equal(await s.counters.value('k', NOW), 5);
    await s.close();
  });

  it('a kill switch set by another connection stops the very next reservation', async () => {
    const file = join(tempDir(), 'kill.db');
    const gateway = openSqliteState(file);
    const cli = openSqliteState(file);
    assert.equal(await gateway.counters.reserveUnlessKilled!('s', [charge('k', 5)], NOW), -1);
    await cli.flags.setKillSwitch('s', true);
    // No new event-loop turn needed: the reservation's own transaction reads the switch.
    assert.equal(await gateway.counters.reserveUnlessKilled!('s', [charge('k', 5)], NOW), KILLED);
    assert.equal(await gateway.counters.value('k', NOW), 1);
    await gateway.close();
    await cli.close();
  });

  it('a kill switch or a grant change written by another connection is seen on the next read', async () => {
    const file = join(tempDir(), 'flags.db');
    const gateway = openSqliteState(file);
    const cli = openSqliteState(file);
    await cli.grants.create({ id: 'gr_1', label: 'a', server: 's', tags: [], createdAt: new Date(NOW).toISOString() }, 'hash-1');
    assert.equal((await gateway.grants.byTokenHash('hash-1'))?.id, 'gr_1');
    assert.equal(await gateway.flags.killedFor('s'), null);
    await cli.grants.rotate('gr_1', 'hash-2');
    await cli.flags.setKillSwitch('s', true);
    // Another process's write reaches the gateway through I/O, so in a later event-loop turn.
    await new Promise((r) => setImmediate(r));
    assert.equal(await gateway.grants.byTokenHash('hash-1'), null, 'the old token stops working');
    assert.equal(await gateway.flags.killedFor('s'), 's');
    assert.equal((await gateway.grants.byTokenHash('hash-2'))?.revokedAt, undefined);
    await gateway.grants.revoke('gr_1', new Date(NOW).toISOString());
    assert.ok((await gateway.grants.byTokenHash('hash-2'))?.revokedAt, 'own writes clear the cache too');
    await gateway.close();
    await cli.close();
  });

  it('an approval decided by another process is decided once and heard by the watcher', async () => {
    const file = join(tempDir(), 'approvals.db');
    const gateway = openSqliteState(file);
    const cli = openSqliteState(file);
    const other = openSqliteState(file);
    const heard = new Promise<string>((resolve) => {
      const stop = gateway.approvals.watch((a) => { if (a.status !== 'pending') { stop(); resolve(`${a.status} by ${a.decidedBy}`); } });
    });
    await gateway.approvals.create(approval('x1'));
    const [a, b] = await Promise.all([
      cli.approvals.decide('x1', { status: 'approved', by: 'cli:a', at: NOW }),
      other.approvals.decide('x1', { status: 'denied', by: 'cli:b', at: NOW }),
    ]);
    assert.equal([a, b].filter(Boolean).length, 1);
    assert.equal(await heard, a ? 'approved by cli:a' : 'denied by cli:b');
    await Promise.all([gateway.close(), cli.close(), other.close()]);
  });

  it('pending approvals survive closing and reopening the file', async () => {
    const file = join(tempDir(), 'approvals-persist.db');
    const s1 = openSqliteState(file);
    await s1.approvals.create(approval('p1'));
    await s1.close();
    const s2 = openSqliteState(file);
    assert.equal((await s2.approvals.get('p1'))?.status, 'pending');
    await s2.close();
  });

  it('counters survive closing and reopening the file', async () => {
    const file = join(tempDir(), 'persist.db');
    const s1 = openSqliteState(file);
    await s1.counters.reserve([charge('k', 10, 7)], NOW);
    await s1.close();
    const s2 = openSqliteState(file);
    assert.equal(await s2.counters.value('k', NOW), 7);
    await s2.close();
  });
});

describe('state DSNs', () => {
  it('opens memory: and sqlite:PATH, refuses what it cannot open with a clear message', async () => {
    assert.equal(openState('memory:').kind, 'memory');
    const dir = tempDir();
    const s = openState('sqlite:./x.db', dir);
    assert.equal(s.kind, 'sqlite');
    await s.close();
    const r = openState(`${redis.url}/3?prefix=dsn&timeout=250ms`);
    assert.equal(r.kind, 'redis');
    await r.close();
    for (const bad of ['redis://:hunter2@localhost:6379/x', 'redis://:hunter2@localhost:6379/0?foo=1', 'redis://:hunter2@localhost:6379/0?timeout=forever', 'redis://:hunter2@localhost:6379/0?prefix=a:b']) {
      assert.throws(() => openState(bad), (err: Error) => /invalid Redis DSN \(redis:\/\/localhost:6379\/[x0]\)/.test(err.message) && !err.message.includes('hunter2'), bad);
    }
    assert.throws(() => openState('postgres://x'), /unknown state DSN/);
  });
});

describe('redis state across instances', () => {
  const fleet = (n: number) => {
    const prefix = freshPrefix();
    return Array.from({ length: n }, () => openRedisState(`${redis.url}/0?prefix=${prefix}`));
  };
  /** Resolves when `store` hears of the next change any instance publishes. */
  const nextChange = (store: ReturnType<typeof openRedisState>) => new Promise<void>((resolve) => store.link.onChange(() => resolve(), () => {}));

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

describe('redis state when Redis goes away', () => {
  it('fails limited work fast and clearly, answers control state from its copy, and recovers by itself', async () => {
    const own = await TestRedis.start();
    const s = openRedisState(`${own.url}/0?timeout=200ms`);
    await s.flags.setKillSwitch('other', true);
    assert.equal(await s.counters.reserve([charge('k', 10)], NOW), -1);
    assert.equal(await s.flags.killedFor('s'), null);
    await own.stop();
    for (let i = 0; i < 3; i++) await assert.rejects(async () => s.counters.reserve([charge('k', 10)], NOW), /^Error: Redis at redis:\/\/127\.0\.0\.1:\d+\/0(: | is unreachable)/);
    assert.equal(s.health!().status, 'unavailable');
    assert.equal(await s.flags.killedFor('s'), null, 'the last known kill switch still answers');
    assert.equal(await s.flags.killedFor('other'), 'other');
    await own.start();
    // Not events.once: it would reject on the 'error' events of the reconnection attempts.
    if (s.link.client.status !== 'ready') await new Promise((resolve) => s.link.client.once('ready', resolve));
    assert.equal(s.health!().status, 'ok');
    assert.equal(await s.counters.reserve([charge('k', 10)], NOW), -1, 'counting again without a restart');
    await s.close();
    await own.stop();
  });
});
