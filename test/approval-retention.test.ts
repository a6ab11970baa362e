// Issue 23 item 4: approval.max_pending counts a grant's pending approvals, and ended approvals
// are purged after the retention — in every state store.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { Approvals } from '../src/approvals/index.js';
import { openMemoryState } from '../src/state/memory.js';
import { openRedisState } from '../src/state/redis.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { Approval, StateStore } from '../src/state/types.js';
import { TestRedis } from './helpers/redis.js';
import { tempDir } from './helpers/toolgate.js';

const NOW = 1_800_000_000_000;
const DAY = 86_400_000;
const approval = (id: string, grant = 'g', extra: Partial<Approval> = {}): Approval => ({
  id, server: 's', grant, session: 'sess', tool: 'delete_file', args: { path: `/${id}` }, binding: `b-${id}`,
  rule: '/tools/delete_file/action', reason: 'needs approval', via: ['cli'], requestedAt: NOW, expiresAt: NOW + 60_000,
  validForMs: 600_000, status: 'pending', ...extra,
});

const redis = await TestRedis.start();
after(() => redis.stop());
let prefixes = 0;

const stores: [string, () => StateStore][] = [
  ['memory', () => openMemoryState()],
  ['sqlite', () => openSqliteState(join(tempDir(), 'state.db'))],
  ['redis', () => openRedisState(`${redis.url}/0?prefix=ret${process.pid}-${++prefixes}`)],
];

for (const [name, open] of stores) {
  describe(`${name}: pending per grant and purge`, () => {
    it('counts only the pending, unexpired approvals of the grant', async () => {
      const s = open();
      for (const id of ['p1', 'p2', 'p3']) await s.approvals.create(approval(id));
      await s.approvals.create(approval('other', 'h'));
      await s.approvals.create(approval('short', 'g', { expiresAt: NOW + 10 }));
      await s.approvals.decide('p3', { status: 'denied', by: 'cli:a', at: NOW + 1 });
      assert.equal(await s.approvals.countPending('g', NOW + 100), 2, 'p1 and p2; p3 is decided, short has expired');
      assert.equal(await s.approvals.countPending('h', NOW + 100), 1);
      await s.close();
    });

    it('purges ended approvals older than the cut-off, and only those', async () => {
      const s = open();
      for (const id of ['denied', 'used', 'timeout', 'recent', 'pending', 'approved', 'last']) await s.approvals.create(approval(id));
      await s.approvals.decide('denied', { status: 'denied', by: 'cli:a', at: NOW + 1 });
      await s.approvals.decide('used', { status: 'approved', by: 'cli:a', at: NOW + 1 });
      assert.equal(await s.approvals.consume('used', NOW + 2), true);
      await s.approvals.decide('timeout', { status: 'timeout', by: 'toolgate', at: NOW + 3 });
      await s.approvals.decide('approved', { status: 'approved', by: 'cli:a', at: NOW + 4 });
      await s.approvals.decide('recent', { status: 'denied', by: 'cli:a', at: NOW + 7 * DAY });
      // The newest change of all: a store that numbers changes keeps its highest number.
      await s.approvals.decide('last', { status: 'denied', by: 'cli:a', at: NOW + 5 });
      const purged = await s.approvals.purge(NOW + DAY, 1000);
      const left = (await s.approvals.list({ limit: 100 })).map((a) => a.id).sort();
      assert.ok(!left.includes('denied') && !left.includes('used') && !left.includes('timeout'), `ended long ago: gone (${left.join(', ')})`);
      for (const id of ['recent', 'pending', 'approved']) assert.ok(left.includes(id), `${id} stays`);
      assert.equal(await s.approvals.get('denied'), null);
      assert.ok(purged >= 3 && purged <= 4, `purged ${purged}`);
      await s.close();
    });

    it('Approvals refuses a held call past max_pending for the grant (by id), and another grant with the same label is not affected', async () => {
      const s = open();
      const approvals = new Approvals({ store: s.approvals, log: pino({ level: 'silent' }) });
      const settings = { timeoutMs: 300_000, via: ['cli'], mode: 'hold' as const, validForMs: 600_000, maxPending: 2 };
      const held = (grantId: string, n: number) => ({ server: 's', grant: 'same-label', grantId, session: 'x', tool: 't', args: { n }, rule: '/r', reason: 'why', settings });
      await approvals.open(held('g', 1));
      await approvals.open(held('g', 2));
      assert.equal((await approvals.open(held('g', 1))).fresh, false, 'the same call finds its own approval, refused or not');
      await assert.rejects(approvals.open(held('g', 3)), /approval\.max_pending/);
      assert.equal((await approvals.open(held('h', 3))).fresh, true);
      approvals.close();
      await s.close();
    });
  });
}
