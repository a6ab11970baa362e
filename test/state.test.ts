import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { openMemoryState } from '../src/state/memory.js';
import { openRedisState } from '../src/state/redis.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { openState } from '../src/state/index.js';
import { KILLED, STATE_LOST, type Charge, type StateStore } from '../src/state/types.js';
import { TestRedis } from './helpers/redis.js';
import { approval, charge, NOW, redisInstancesContract, storeContract } from './helpers/state-contract.js';
import { ROOT, tempDir } from './helpers/toolgate.js';

const run = promisify(execFile);

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

for (const [name, open] of stores) storeContract(name, open);

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

redisInstancesContract('redis state across instances', (n) => {
  const prefix = freshPrefix();
  return Array.from({ length: n }, () => openRedisState(`${redis.url}/0?prefix=${prefix}`));
});

describe('redis state when Redis goes away', () => {
  it('fails limited work fast and clearly, answers control state from its copy, and reconnects by itself — to a Redis that lost its counters, so limited work waits for reset-ack', async () => {
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
    // The test's Redis keeps nothing across a restart: the counters are gone, and the instance must not count from zero silently.
    assert.equal(await s.counters.reserve([charge('k', 10)], NOW), STATE_LOST, 'state lost: refused, not counted from zero');
    assert.equal(s.health!().status, 'unavailable');
    assert.match(s.health!().detail!, /state lost .*toolgate state reset-ack/);
    await s.resetGeneration!('test');
    assert.equal(await s.counters.reserve([charge('k', 10)], NOW), -1, 'counting again after the acknowledgement, without a restart');
    assert.equal(s.health!().status, 'ok');
    await s.close();
    await own.stop();
  });
});

describe('redis: many commands while the connection is not ready yet (issue 23 #21)', () => {
  it('share one wait for it: one ready listener, not one per command (no MaxListeners warning)', async () => {
    const own = await TestRedis.start();
    const s = openRedisState(`${own.url}/0?timeout=2s`);
    try {
      const before = s.link.client.listenerCount('ready');
      const waits = Array.from({ length: 25 }, () => s.link.ready());
      assert.ok(s.link.client.status === 'ready' || s.link.client.listenerCount('ready') <= before + 1, `${s.link.client.listenerCount('ready')} ready listeners`);
      await Promise.all(waits);
      assert.equal(s.link.client.listenerCount('ready'), before, 'the wait leaves no listener behind');
    } finally {
      await s.close();
      await own.stop();
    }
  });
});
