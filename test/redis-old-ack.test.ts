// Regression (issue 23, attack 3 F3): an older `reset-ack` marker coming back (a restored snapshot,
// SWAPDB) is a loss, not an acknowledgement: only a reset-ack newer than the state an instance
// knew is accepted.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { Redis } from 'ioredis';
import { openRedisState } from '../src/state/redis.js';
import { STATE_LOST, type Charge } from '../src/state/types.js';
import { TestRedis } from './helpers/redis.js';

const redis = await TestRedis.start();
const raw = new Redis(redis.url);
after(async () => { raw.disconnect(); await redis.stop(); });
const NOW = Date.now();
const charge = (max: number): Charge => ({ key: 'k', amount: 1, max, expiresAt: NOW + 3_600_000 });

it('a marker older than the one an instance works under is a loss, not an acknowledgement', async () => {
  const s = openRedisState(`${redis.url}/0?prefix=oldack`);
  const logged: string[] = [];
  await s.begin?.((level, m) => { logged.push(`${level} ${m}`); });
  for (let i = 0; i < 3; i++) assert.equal(await s.counters.reserve([charge(3)], NOW), -1);
  assert.equal(await s.counters.reserve([charge(3)], NOW), 0, 'limit of 3 used up');
  // What a restored snapshot from last week brings back: its counters (none used) and its marker.
  const old = JSON.stringify({ id: 'aaaaaaaaaaaaaaaa', by: 'reset-ack', at: '2026-01-01T00:00:00.000Z', who: 'ops' });
  const keys = await raw.keys('oldack:*');
  await raw.del(...keys.filter((k) => !k.endsWith(':generation')));
  await raw.set('oldack:generation', old);
  const got = await s.counters.reserve([charge(3)], NOW);
  await s.close();
  assert.equal(got, STATE_LOST, `a 4th call of a limit of 3 got ${got} (-1 = allowed) after an old marker came back; log: ${logged.join(' / ')}`);
});
