import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { CallCounter, CallHistogram } from '../src/gateway/call-metrics.js';
import { GatewayMetrics } from '../src/gateway/metrics.js';
import { openMemoryState } from '../src/state/memory.js';
import type { Approval, StateHealth } from '../src/state/types.js';

/** Exposition lines as comparable facts: name, labels sorted, value. */
function facts(text: string): string[] {
  return text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(l);
    assert.ok(m, l);
    const labels = (m[2] ?? '').split(/,(?=\w+=")/).filter(Boolean).sort().join(',');
    return `${m[1]}{${labels}} ${m[3]}`;
  }).sort();
}

describe('call-path metrics', () => {
  it('expose what prom-client\'s own counter and histogram expose for the same observations', async () => {
    const [ours, theirs] = [new Registry(), new Registry()];
    const buckets = [0.001, 0.01, 0.1, 1];
    const counter = new CallCounter({ name: 'c_total', help: 'h', labelNames: ['server', 'tool'], registers: [ours] });
    const histogram = new CallHistogram({ name: 'h_seconds', help: 'h', labelNames: ['server', 'outcome'], buckets, registers: [ours] });
    const pCounter = new Counter({ name: 'c_total', help: 'h', labelNames: ['server', 'tool'], registers: [theirs] });
    const pHistogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['server', 'outcome'], buckets, registers: [theirs] });
    const values = [0.0005, 0.001, 0.004, 0.5, 2, 7, 0.02];
    for (const [server, tool] of [['a', 'x'], ['a', 'x'], ['b', 'say "hi"\n']]) {
      counter.inc(server, tool);
      pCounter.inc({ server, tool });
    }
    const series = histogram.child('a', 'result');
    for (const v of values) {
      series.observe(v);
      pHistogram.observe({ server: 'a', outcome: 'result' }, v);
    }
    histogram.child('b', 'error').observe(0.05);
    pHistogram.observe({ server: 'b', outcome: 'error' }, 0.05);
    assert.deepEqual(facts(await ours.metrics()), facts(await theirs.metrics()));
    assert.match(await ours.metrics(), /# TYPE h_seconds histogram/);
    ours.resetMetrics();
    assert.equal(facts(await ours.metrics()).length, 0);
  });
});

/** The value of one unlabelled (or exactly labelled) series in an exposition. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('gateway gauges for alerts', () => {
  it('toolgate_oldest_pending_approval_seconds is the age of the oldest pending approval, 0 when none is pending', async () => {
    const state = openMemoryState();
    const metrics = new GatewayMetrics();
    const stop = metrics.followApprovals(state.approvals, (err) => { throw err; });
    const now = Date.now();
    const approval = (id: string, ageMs: number): Approval => ({
      id, server: 's', grant: 'g', session: 'x', tool: 't', args: {}, binding: id, rule: '/tools/t', reason: 'r', via: ['cli'],
      requestedAt: now - ageMs, expiresAt: now + 3_600_000, validForMs: 60_000, status: 'pending',
    });
    assert.equal(value(await metrics.registry.metrics(), 'toolgate_oldest_pending_approval_seconds'), 0);
    await state.approvals.create(approval('young', 5_000));
    await state.approvals.create(approval('old', 600_000));
    await until(async () => value(await metrics.registry.metrics(), 'toolgate_pending_approvals') === 2);
    const aged = value(await metrics.registry.metrics(), 'toolgate_oldest_pending_approval_seconds')!;
    assert.ok(aged >= 600 && aged < 700, `oldest is about 600 s old, got ${aged}`);
    await state.approvals.decide('old', { status: 'denied', by: 'test', at: Date.now() });
    await until(async () => value(await metrics.registry.metrics(), 'toolgate_pending_approvals') === 1);
    const left = value(await metrics.registry.metrics(), 'toolgate_oldest_pending_approval_seconds')!;
    assert.ok(left >= 5 && left < 100, `the young one is left, got ${left}`);
    stop();
    await state.close();
  });

  it('toolgate_state_up follows the store health /healthz reports', async () => {
    const metrics = new GatewayMetrics();
    let health: StateHealth = { kind: 'redis', status: 'ok' };
    metrics.watchState('redis', () => health);
    assert.equal(value(await metrics.registry.metrics(), 'toolgate_state_up{kind="redis"}'), 1);
    health = { kind: 'redis', status: 'unavailable', detail: 'state lost' };
    assert.equal(value(await metrics.registry.metrics(), 'toolgate_state_up{kind="redis"}'), 0);
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
}
