import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { FIXTURES } from './toolgate.js';

/**
 * An OTLP/HTTP receiver on 127.0.0.1 for tests: it decodes what the OpenTelemetry exporters send
 * with the official protobuf definitions (vendored, pinned: test/fixtures/otlp-proto/README.md)
 * and keeps spans, metrics and log records in a flat form.
 */

const PROTO_ROOT = join(FIXTURES, 'otlp-proto');

function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
  root.loadSync([
    'opentelemetry/proto/collector/trace/v1/trace_service.proto',
    'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
    'opentelemetry/proto/collector/logs/v1/logs_service.proto',
  ], { keepCase: false });
  return root;
}

export type AttrValue = string | number | boolean | undefined;
export type Attrs = Record<string, AttrValue>;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Attrs;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Attrs;
}

export interface ReceivedMetric {
  name: string;
  unit: string;
  /** The decoded OTLP Metric (its data in sum, gauge or histogram), attributes flattened. */
  points: { attributes: Attrs; count?: number; sum?: number; value?: number; bucketCounts?: number[]; explicitBounds?: number[] }[];
  kind: 'sum' | 'gauge' | 'histogram' | 'other';
}

export interface ReceivedLog {
  body: AttrValue;
  severityText: string;
  eventName: string;
  attributes: Attrs;
  /** The span the record was made in ('' when none). */
  traceId: string;
  spanId: string;
}

type Obj = Record<string, unknown>;

function anyValue(v: Obj | undefined): AttrValue {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return String(v.stringValue);
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return Number(v.doubleValue);
  if (v.boolValue !== undefined) return Boolean(v.boolValue);
  if (v.arrayValue !== undefined) return JSON.stringify(((v.arrayValue as Obj).values as Obj[] ?? []).map(anyValue));
  return undefined;
}

function attrs(list: unknown): Attrs {
  const out: Attrs = {};
  for (const kv of (list as Obj[] | undefined) ?? []) out[String(kv.key)] = anyValue(kv.value as Obj);
  return out;
}

const hex = (b: unknown) => (b instanceof Uint8Array ? Buffer.from(b).toString('hex') : '');

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly metrics: ReceivedMetric[] = [];
  readonly logs: ReceivedLog[] = [];
  /** Every export request: its path and content type. */
  readonly requests: { path: string; contentType: string }[] = [];
  private readonly root = loadRoot();
  private readonly server: Server;
  private waiters: (() => void)[] = [];

  private constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        this.requests.push({ path: req.url ?? '', contentType: String(req.headers['content-type']) });
        try {
          this.receive(req.url ?? '', body);
        } catch (err) {
          res.writeHead(400).end(String(err));
          return;
        }
        // An empty Export*ServiceResponse: everything accepted.
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w();
      });
    });
  }

  static async start(): Promise<OtlpReceiver> {
    const r = new OtlpReceiver();
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
    return r;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private decode(type: string, body: Buffer): Obj {
    const T = this.root.lookupType(type);
    return T.toObject(T.decode(body), { longs: Number, defaults: false, arrays: true }) as Obj;
  }

  private receive(path: string, body: Buffer): void {
    if (path === '/v1/traces') {
      const req = this.decode('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest', body);
      for (const rs of req.resourceSpans as Obj[]) {
        const resource = attrs((rs.resource as Obj | undefined)?.attributes);
        for (const ss of rs.scopeSpans as Obj[]) {
          for (const s of ss.spans as Obj[]) {
            this.spans.push({
              traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: String(s.name),
              kind: Number(s.kind ?? 0), attributes: attrs(s.attributes), status: Number((s.status as Obj | undefined)?.code ?? 0), resource,
            });
          }
        }
      }
    } else if (path === '/v1/metrics') {
      const req = this.decode('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest', body);
      for (const rm of req.resourceMetrics as Obj[]) {
        for (const sm of rm.scopeMetrics as Obj[]) {
          for (const m of sm.metrics as Obj[]) {
            const kind = m.histogram ? 'histogram' : m.sum ? 'sum' : m.gauge ? 'gauge' : 'other';
            const data = (m.histogram ?? m.sum ?? m.gauge) as Obj | undefined;
            const points = ((data?.dataPoints as Obj[] | undefined) ?? []).map((p) => ({
              attributes: attrs(p.attributes),
              count: p.count === undefined ? undefined : Number(p.count),
              sum: p.sum === undefined ? undefined : Number(p.sum),
              value: p.asDouble !== undefined ? Number(p.asDouble) : p.asInt !== undefined ? Number(p.asInt) : undefined,
              bucketCounts: (p.bucketCounts as unknown[] | undefined)?.map(Number),
              explicitBounds: (p.explicitBounds as unknown[] | undefined)?.map(Number),
            }));
            this.metrics.push({ name: String(m.name), unit: String(m.unit ?? ''), kind, points });
          }
        }
      }
    } else if (path === '/v1/logs') {
      const req = this.decode('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest', body);
      for (const rl of req.resourceLogs as Obj[]) {
        for (const sl of rl.scopeLogs as Obj[]) {
          for (const l of sl.logRecords as Obj[]) {
            this.logs.push({
              body: anyValue(l.body as Obj), severityText: String(l.severityText ?? ''), eventName: String(l.eventName ?? ''),
              attributes: attrs(l.attributes), traceId: hex(l.traceId), spanId: hex(l.spanId),
            });
          }
        }
      }
    } else {
      throw new Error(`unexpected OTLP path ${path}`);
    }
  }

  /** Resolves with `find()`'s first defined answer, checked after every export; fails after `ms`. */
  async waitFor<T>(find: () => T | undefined, what: string, ms = 20_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = find();
      if (found !== undefined && found !== false) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`OTLP receiver: no ${what} within ${ms} ms (spans: ${this.spans.map((s) => s.name).join(', ')})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(t); resolve(); });
      });
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
