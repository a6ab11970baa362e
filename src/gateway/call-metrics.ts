import type { Metric, Registry } from 'prom-client';

/**
 * A counter and a histogram for the path of every tools/call. A series (one label set) is found by
 * its label values and kept by whoever observes it, so an observation is a few additions; scrapes
 * read them through the prom-client registry like its own metrics. prom-client's own `observe`
 * and `inc` check and hash their labels object on every call — three per tools/call, about 4 µs
 * each on a cold cache, and garbage for the collector — which a profile of the gateway showed.
 */

interface Options { name: string; help: string; labelNames: readonly string[]; registers: Registry[] }

type Labels = Record<string, string | number>;

abstract class CallMetric<S extends { labels: Labels }> {
  readonly name: string;
  readonly help: string;
  protected readonly series = new Map<string, S>();

  constructor(private readonly opts: Options) {
    this.name = opts.name;
    this.help = opts.help;
    // The registry only reads `name`, `get` and `reset`: what every prom-client metric has.
    for (const r of opts.registers) r.registerMetric(this as unknown as Metric);
  }

  protected find(values: readonly string[]): S {
    const key = values.join('\x1f');
    let s = this.series.get(key);
    if (!s) {
      const labels: Labels = {};
      this.opts.labelNames.forEach((n, i) => { labels[n] = values[i]; });
      s = this.make(labels);
      this.series.set(key, s);
    }
    return s;
  }

  protected abstract make(labels: Labels): S;

  reset(): void {
    this.series.clear();
  }
}

interface CounterSeries { labels: Labels; value: number }

export class CallCounter extends CallMetric<CounterSeries> {
  /** Adds one to the series of these label values, in `labelNames` order. */
  inc(...values: string[]): void {
    this.find(values).value++;
  }

  protected make(labels: Labels): CounterSeries {
    return { labels, value: 0 };
  }

  async get() {
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values: [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value })) };
  }
}

interface HistogramSeries { labels: Labels; counts: number[]; sum: number; count: number }

export class CallHistogram extends CallMetric<HistogramSeries> {
  private readonly buckets: readonly number[];

  constructor(opts: Options & { buckets: readonly number[] }) {
    super(opts);
    this.buckets = [...opts.buckets].sort((a, b) => a - b);
  }

  /** The series for these label values, in `labelNames` order: keep it, observe with it. */
  child(...values: string[]): { observe(value: number): void } {
    const s = this.find(values);
    const buckets = this.buckets;
    return {
      observe: (value: number) => {
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < buckets.length && value > buckets[i]) i++;
        if (i < buckets.length) s.counts[i]++;
        s.sum += value;
        s.count++;
      },
    };
  }

  protected make(labels: Labels): HistogramSeries {
    return { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }

  async get() {
    const values = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += s.counts[i];
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: this.buckets[i] }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}
