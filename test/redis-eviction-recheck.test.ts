// Regression (issue 23, attack 3 F7): maxmemory_policy was read only at start. The periodic check
// re-reads it: a change to a policy that may evict keys is logged as an error and makes the state
// health degraded (so /healthz says degraded and toolgate_state_up reads 0); back to noeviction, ok.
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { Redis } from 'ioredis';
import { openRedisState } from '../src/state/redis.js';
import { TestRedis } from './helpers/redis.js';

const redis = await TestRedis.start();
const raw = new Redis(redis.url);
after(async () => { raw.disconnect(); await redis.stop(); });

it('an evicting maxmemory_policy set after start is reported as degraded health, and noeviction again clears it', async () => {
  const s = openRedisState(`${redis.url}/0?prefix=evict-recheck`);
  const logged: string[] = [];
  await s.begin?.((level, m) => { logged.push(`${level} ${m}`); });
  assert.equal(s.health?.().status, 'ok');
  await raw.config('SET', 'maxmemory-policy', 'volatile-lru');
  await s.link.generation.recheckEviction();
  const h = s.health?.();
  assert.equal(h?.status, 'degraded', JSON.stringify(h));
  assert.match(h?.detail ?? '', /volatile-lru/);
  assert.ok(logged.some((l) => l.startsWith('error') && l.includes('volatile-lru')), logged.join(' / '));
  await raw.config('SET', 'maxmemory-policy', 'noeviction');
  await s.link.generation.recheckEviction();
  assert.equal(s.health?.().status, 'ok');
  await s.close();
});
