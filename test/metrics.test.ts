import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { CallCounter, CallHistogram } from '../src/gateway/call-metrics.js';

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
