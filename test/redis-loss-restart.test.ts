// Regression (issue 23, attack 3 F2): a loss an instance noticed leaves a lasting `lost` marker in
// Redis, so an instance started later (after the lost one's fleet announcement aged out) stays lost
// until reset-ack instead of writing a fresh marker and counting from zero.
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

it('a loss an instance noticed survives its restart: the next instance is lost too until reset-ack', async () => {
  const dsn = `${redis.url}/0?prefix=lossrestart`;
  const a = openRedisState(dsn);
  await a.begin?.(() => {});
  for (let i = 0; i < 3; i++) assert.equal(await a.counters.reserve([charge(3)], NOW), -1);
  await raw.flushall();
  assert.equal(await a.counters.reserve([charge(3)], NOW), STATE_LOST, 'the running instance notices and fails closed');
  await a.fleet?.announce({ instance: 'a', listen: 'http://127.0.0.1:1', servers: [], sessions: 0, startedAt: new Date().toISOString() });
  await a.close();
  // 15 s later the stopped instance's announcement is no longer live (simulated: its score set back).
  await raw.zadd('lossrestart:instances', Date.now() - 60_000, 'a');
  const b = openRedisState(dsn);
  const logged: string[] = [];
  await b.begin?.((level, m) => { logged.push(`${level} ${m}`); });
  const got = await b.counters.reserve([charge(3)], NOW);
  assert.equal(got, STATE_LOST, `after a restart the 4th call of a limit of 3 got ${got} (-1 = allowed); log: ${logged.join(' / ')}`);
  assert.equal(b.health?.().status, 'unavailable');
  // The operator acknowledges: the lasting marker is replaced by a newer reset-ack, and the restarted instance counts again.
  await b.resetGeneration?.('ops');
  assert.equal(await b.counters.reserve([charge(3)], NOW), -1, 'counted again after reset-ack');
  await b.close();
});
