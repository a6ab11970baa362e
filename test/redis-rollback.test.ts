// Regression (issue 23, attack 3 F4): a Redis restart onto an older RDB snapshot (or a restored
// backup, a lagging replica promoted) rolls the reservation sequence back with the counters; the
// instance has seen a higher one and refuses limited calls until reset-ack.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { Redis } from 'ioredis';
import { openRedisState } from '../src/state/redis.js';
import { STATE_LOST, type Charge } from '../src/state/types.js';
import { TestRedis } from './helpers/redis.js';

const dir = mkdtempSync(join(tmpdir(), 'attack3-rdb-'));
const redis = await TestRedis.start(['--dir', dir]);
after(async () => { await redis.stop(); rmSync(dir, { recursive: true, force: true }); });
const NOW = Date.now();
const charge = (max: number): Charge => ({ key: 'k', amount: 1, max, expiresAt: NOW + 3_600_000 });

it('a restart onto an older snapshot is noticed: the limit used up before it still holds, or limited calls are refused', async () => {
  const s = openRedisState(`${redis.url}/0?prefix=rollback`);
  await s.begin?.(() => {});
  for (let i = 0; i < 2; i++) assert.equal(await s.counters.reserve([charge(4)], NOW), -1);
  const raw = new Redis(redis.url);
  await raw.save(); // the snapshot: 2 of 4 used
  raw.disconnect();
  for (let i = 0; i < 2; i++) assert.equal(await s.counters.reserve([charge(4)], NOW), -1);
  assert.equal(await s.counters.reserve([charge(4)], NOW), 0, 'all 4 used');
  await redis.stop(); // a crash: the last 2 writes were never saved
  await redis.start(); // loads the snapshot, marker included
  let after = 0;
  for (let i = 0; i < 50 && after === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await Promise.resolve(s.counters.reserve([charge(4)], NOW)).catch(() => 0);
  }
  await s.close();
  assert.ok(after === 0 || after === STATE_LOST, `after the rollback a 5th call of a limit of 4 got ${after} (-1 = allowed): the limit came back unnoticed`);
});
