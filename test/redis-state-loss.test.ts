import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { Approvals } from '../src/approvals/index.js';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { createLogger } from '../src/log.js';
import { openState } from '../src/state/index.js';
import { openRedisState } from '../src/state/redis.js';
import { KEEP_MS } from '../src/state/redis-approvals.js';
import { STATE_LOST, type Approval, type Charge } from '../src/state/types.js';
import { until } from './helpers/approvals.js';
import { TestRedis } from './helpers/redis.js';

const NOW = Date.now();
const charge = (key: string, max: number): Charge => ({ key, amount: 1, max, expiresAt: NOW + 3_600_000 });

const redis = await TestRedis.start();
const raw = new Redis(redis.url);
after(async () => { raw.disconnect(); await redis.stop(); });

let n = 0;
const fresh = () => `loss${n++}`;
type Logged = [string, string][];
const logger = (into: Logged) => (level: string, message: string) => { into.push([level, message]); };

describe('a Redis that may evict keys', () => {
  it('is refused at start, in one line naming it and the way out; eviction=warn starts with a warning', async () => {
    const evicting = await TestRedis.start(['--maxmemory-policy', 'volatile-lru']);
    try {
      const s = openRedisState(`redis://:hunter2@127.0.0.1:${evicting.port}/0?prefix=${fresh()}`);
      await assert.rejects(s.begin!(() => {}), (err: Error) => {
        assert.match(err.message, /^Redis at redis:\/\/127\.0\.0\.1:\d+\/0 may evict keys \(maxmemory_policy volatile-lru\).*Set maxmemory-policy noeviction.*eviction=warn/);
        assert.ok(!err.message.includes('hunter2') && !err.message.includes('\n'));
        return true;
      });
      await s.close();
      const logged: Logged = [];
      const w = openRedisState(`redis://127.0.0.1:${evicting.port}/0?prefix=${fresh()}&eviction=warn`);
      await w.begin!(logger(logged));
      assert.ok(logged.some(([level, m]) => level === 'warn' && /maxmemory_policy volatile-lru.*eviction=warn/.test(m)), JSON.stringify(logged));
      await w.close();
    } finally {
      await evicting.stop();
    }
  });

  it('the tests\' own Redis runs noeviction (Redis\'s default): it starts without a word about eviction', async () => {
    const logged: Logged = [];
    const s = openRedisState(`${redis.url}/0?prefix=${fresh()}`);
    await s.begin!(logger(logged));
    assert.ok(!logged.some(([, m]) => /maxmemory_policy|may evict/.test(m)), JSON.stringify(logged));
    await s.close();
  });
});

describe('the state generation', () => {
  it('the first instance on an empty keyspace says loudly that it starts empty; the next one joins quietly', async () => {
    const prefix = fresh();
    const first: Logged = [];
    const a = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    await a.begin!(logger(first));
    assert.ok(first.some(([level, m]) => level === 'warn' && /starts EMPTY/.test(m) && m.includes(`prefix ${prefix}`)), JSON.stringify(first));
    const second: Logged = [];
    const b = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    await b.begin!(logger(second));
    assert.deepEqual(second, []);
    await Promise.all([a.close(), b.close()]);
  });

  it('existing state without a marker (an upgrade from a version without one) is kept, and said so, not called empty', async () => {
    const prefix = fresh();
    await raw.hset(`${prefix}:grants`, 'g1', JSON.stringify({ id: 'g1', label: 'ci', server: 's', tags: [], createdAt: new Date().toISOString() }));
    const logged: Logged = [];
    const a = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    await a.begin!(logger(logged));
    assert.ok(logged.some(([level, m]) => level === 'warn' && /had no state generation marker: one is written now and the state there is kept/.test(m)), JSON.stringify(logged));
    assert.ok(!logged.some(([, m]) => /EMPTY|LOST/.test(m)), JSON.stringify(logged));
    assert.equal(await a.counters.reserve([charge('k', 3)], NOW), -1);
    await a.close();
  });

  it('FLUSHALL during a run: limited calls are refused (nothing counted) until reset-ack, then the exact limit holds again', async () => {
    const prefix = fresh();
    const logged: Logged = [];
    const a = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    const b = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    await a.begin!(logger(logged));
    await b.begin!(() => {});
    for (let i = 0; i < 3; i++) assert.equal(await a.counters.reserve([charge('k', 3)], NOW), -1);
    assert.equal(await b.counters.reserve([charge('k', 3)], NOW), 0, 'the limit of 3 holds across both');
    await raw.flushall();
    for (const s of [a, b]) for (let i = 0; i < 3; i++) assert.equal(await s.counters.reserve([charge('k', 3)], NOW), STATE_LOST);
    assert.equal(await raw.exists(`${prefix}:c:k`), 0, 'nothing was counted while lost');
    assert.ok(logged.some(([level, m]) => level === 'error' && /was LOST.*toolgate state reset-ack/.test(m)), JSON.stringify(logged));
    assert.equal(a.health!().status, 'unavailable');
    await b.resetGeneration!('operator');
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await (i % 2 ? a : b).counters.reserve([charge('k', 3)], NOW));
    assert.deepEqual(results, [-1, -1, -1, 0], 'counting from zero again, to exactly 3');
    assert.equal(a.health!().status, 'ok');
    await Promise.all([a.close(), b.close()]);
  });

  it('the agent is told why, and fail_open does not forward: the store answered, with its counters gone', async () => {
    const state = openState(`${redis.url}/0?prefix=${fresh()}`);
    await state.begin!(() => {});
    const r = validatePolicyObject({ version: '1', default: 'deny', tools: { t: { limits: [{ counter: 'c', window: 'hour', max: 5, scope: 'server' }] }, free: {} } });
    assert.ok(r.ok);
    const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: state.counters, flags: state.flags, failOpen: true });
    const call = (tool: string) => engine.decide({ tool, args: {}, grant: { label: 'ci', tags: [] }, session: { id: 's1' }, server: { name: 's' }, now: Date.now() });
    assert.equal((await call('t')).verdict, 'allow');
    await raw.flushall();
    const d = await call('t');
    assert.equal(d.verdict, 'deny');
    assert.equal(d.rule, '(state-lost)');
    assert.match(d.message!, /lost its counters .*toolgate state reset-ack\. The call was not forwarded\./);
    assert.equal((await call('free')).verdict, 'allow', 'a call without limits carries on');
    await state.close();
  });

  it('an instance starting after a flush while instances that held the state are live starts lost too', async () => {
    const prefix = fresh();
    const a = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    await a.begin!(() => {});
    assert.equal(await a.counters.reserve([charge('k', 3)], NOW), -1);
    await raw.flushall();
    await a.fleet!.announce({ instance: 'a', listen: 'x', servers: [], sessions: 0, startedAt: new Date().toISOString() });
    const logged: Logged = [];
    const c = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    await c.begin!(logger(logged));
    assert.ok(logged.some(([level, m]) => level === 'error' && /LOST/.test(m)) && !logged.some(([, m]) => /EMPTY/.test(m)), JSON.stringify(logged));
    assert.equal(await c.counters.reserve([charge('k', 3)], NOW), STATE_LOST);
    await c.resetGeneration!('operator');
    assert.equal(await c.counters.reserve([charge('k', 3)], NOW), -1);
    assert.equal(await a.counters.reserve([charge('k', 3)], NOW), -1);
    await Promise.all([a.close(), c.close()]);
  });
});

function approval(id: string, over: Partial<Approval> = {}): Approval {
  return {
    id, server: 's', grant: 'g', session: 'x', tool: 't', args: {}, binding: `b-${id}`, rule: '/tools/t', reason: 'held', via: ['cli'],
    requestedAt: Date.now(), expiresAt: Date.now() + 300_000, validForMs: 600_000, status: 'pending', ...over,
  };
}

describe('approvals in Redis', () => {
  it('every approval record and its binding index expire: its timeout plus valid_for plus a day', async () => {
    const prefix = fresh();
    const s = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    const a = approval('ttl2345678');
    await s.approvals.create(a);
    const deadline = a.expiresAt + a.validForMs + KEEP_MS;
    for (const key of [`${prefix}:approval:${a.id}`, `${prefix}:approvals:binding:${a.binding}`]) {
      const at = await raw.pexpiretime(key);
      assert.ok(Math.abs(at - deadline) < 5, `${key} expires at ${at}, expected ${deadline}`);
    }
    await s.close();
  });

  it('a forged PUBLISH on the change channel changes nothing a waiting call or a watcher sees', async () => {
    const prefix = fresh();
    const s = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    const other = openRedisState(`${redis.url}/0?prefix=${prefix}`);
    const approvals = new Approvals({ store: s.approvals, log: createLogger('silent') });
    const a = approval('fg23456789');
    await s.approvals.create(a);
    await s.link.subscribed;
    const heard: Approval[] = [];
    const stop = s.approvals.watch((x) => heard.push(x));
    let outcome: Approval | null | undefined;
    void approvals.wait(a).then((x) => { outcome = x; });
    const channel = `${prefix}:changes`;
    // The old message format carried the whole record; the new one names the id. Neither is believed: the store is read.
    const forged = ['json', JSON.stringify({ ...a, status: 'denied' }), 'status', 'denied', 'decidedBy', 'admin', 'decisionReason', 'FORGED: run rm -rf'];
    await raw.publish(channel, `approval ${JSON.stringify(forged)}`);
    await raw.publish(channel, `approval-id ${a.id}`);
    await raw.publish(channel, `approval ${a.id}`);
    await raw.publish(channel, 'flags');
    // A real decision made after the forgeries is heard: once it is, the forgeries were all handled before it.
    await other.approvals.decide(a.id, { status: 'denied', by: 'cli:alice', reason: 'not today', at: Date.now() });
    await until(() => outcome !== undefined, 'the waiting call hears the real decision');
    assert.equal(outcome!.decisionReason, 'not today');
    assert.equal(outcome!.decidedBy, 'cli:alice');
    await until(() => heard.some((x) => x.status === 'denied'), 'the watcher hears the real decision');
    assert.ok(heard.every((x) => x.decisionReason !== 'FORGED: run rm -rf' && x.decidedBy !== 'admin'), JSON.stringify(heard));
    // The forged `approval-id ID` wake-up made the store be read: the watcher heard the record as the store had it (pending), nothing more.
    assert.deepEqual(heard.map((x) => [x.status, x.decisionReason]), [['pending', undefined], ['denied', 'not today']]);
    stop();
    approvals.close();
    await Promise.all([s.close(), other.close()]);
  });
});
