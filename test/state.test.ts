import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { openMemoryState } from '../src/state/memory.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { openState } from '../src/state/index.js';
import type { Charge, StateStore } from '../src/state/types.js';
import { ROOT, tempDir } from './helpers/toolgate.js';

const run = promisify(execFile);
const NOW = 1_800_000_000_000;
const charge = (key: string, max: number, amount = 1, expiresAt = NOW + 60_000): Charge => ({ key, amount, max, expiresAt });

/** The contract every counter and flag store passes (Redis will join this list). */
const stores: [string, () => StateStore][] = [
  ['memory', () => openMemoryState()],
  ['sqlite', () => openSqliteState(join(tempDir(), 'state.db'))],
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
  });
}

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
    assert.throws(() => openState('redis://:hunter2@localhost:6379/0'), (err: Error) => /not supported/.test(err.message) && !err.message.includes('hunter2'));
    assert.throws(() => openState('postgres://x'), /unknown state DSN/);
  });
});
