import { ValueType, type Attributes, type HrTime } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, type CollectionResult, type MetricData, type MetricProducer } from '@opentelemetry/sdk-metrics';
import type { Registry } from 'prom-client';

interface PromValue { value: number; labels: Record<string, string | number>; metricName?: string }
interface PromMetric { name: string; help: string; type: string; values: PromValue[] }

const hr = (ms: number): HrTime => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];

/**
 * Toolgate's Prometheus metrics, read from the same registry /metrics serves, as OTLP metrics
 * at each export: counters as monotonic sums (named without `_total`), gauges as gauges,
 * histograms with their buckets. Nothing is counted twice: a collection reads what a scrape would.
 */
export function prometheusProducer(registry: () => Registry | undefined): MetricProducer {
  const start = hr(performance.timeOrigin);
  return {
    async collect(): Promise<CollectionResult> {
      const metrics: MetricData[] = [];
      const errors: unknown[] = [];
      const from = registry();
      if (from) {
        try {
          const end = hr(Date.now());
          for (const m of (await from.getMetricsAsJSON()) as unknown as PromMetric[]) {
            const converted = convert(m, start, end);
            if (converted) metrics.push(converted);
          }
        } catch (err) {
          errors.push(err);
        }
      }
      // The reader keeps its own resource and takes only the scope metrics of a producer.
      return { resourceMetrics: { resource: undefined as never, scopeMetrics: metrics.length ? [{ scope: { name: 'toolgate.prometheus' }, metrics }] : [] }, errors };
    },
  };
}

function convert(m: PromMetric, startTime: HrTime, endTime: HrTime): MetricData | undefined {
  const unit = m.name.endsWith('_seconds') ? 's' : m.name.endsWith('_bytes') ? 'By' : '';
  const descriptor = (name: string) => ({ name, description: m.help, unit, valueType: ValueType.DOUBLE });
  const point = <T>(labels: Record<string, string | number>, value: T) => ({ startTime, endTime, attributes: labels as Attributes, value });
  if (m.type === 'counter') {
    return {
      descriptor: descriptor(m.name.replace(/_total$/, '')), aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.SUM, isMonotonic: true, dataPoints: m.values.map((v) => point(v.labels, v.value)),
    };
  }
  if (m.type === 'gauge') {
    return { descriptor: descriptor(m.name), aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.GAUGE, dataPoints: m.values.map((v) => point(v.labels, v.value)) };
  }
  if (m.type !== 'histogram') return undefined;
  // One series per label set (without le): cumulative buckets become per-bucket counts.
  const series = new Map<string, { labels: Record<string, string | number>; le: [number, number][]; sum: number; count: number }>();
  for (const v of m.values) {
    const { le, ...labels } = v.labels;
    const key = JSON.stringify(Object.entries(labels).sort());
    let s = series.get(key);
    if (!s) series.set(key, (s = { labels, le: [], sum: 0, count: 0 }));
    const kind = v.metricName ?? '';
    if (kind.endsWith('_bucket') && le !== undefined && le !== '+Inf') s.le.push([Number(le), v.value]);
    else if (kind.endsWith('_sum')) s.sum = v.value;
    else if (kind.endsWith('_count')) s.count = v.value;
  }
  return {
    descriptor: descriptor(m.name), aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.HISTOGRAM,
    dataPoints: [...series.values()].map((s) => {
      s.le.sort((a, b) => a[0] - b[0]);
      const counts = s.le.map(([, cumulative], i) => cumulative - (i > 0 ? s.le[i - 1][1] : 0));
      counts.push(s.count - (s.le.length > 0 ? s.le[s.le.length - 1][1] : 0));
      return point(s.labels, { buckets: { boundaries: s.le.map(([b]) => b), counts }, sum: s.sum, count: s.count });
    }),
  };
}
