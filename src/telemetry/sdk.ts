import { diag, DiagLogLevel, ROOT_CONTEXT, type Context } from '@opentelemetry/api';
import { SeverityNumber, type Logger as OtelLogger } from '@opentelemetry/api-logs';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Registry } from 'prom-client';
import { prometheusProducer } from './prom-bridge.js';
import type { TelemetrySettings } from './settings.js';
import { OtelSessionTelemetry, type McpInstruments } from './tracing.js';
import type { SessionInfo, SessionTelemetry, Telemetry } from './types.js';

/** How long stopping waits for the last exports (a collector that is away must not hold a restart). */
const SHUTDOWN_MS = 5000;
/** The SDK's own complaints (an export that failed) reach the log at most this often. */
const COMPLAINT_EVERY_MS = 60_000;

/** The MCP semantic conventions' recommended bucket boundaries for operation durations (seconds). */
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

export interface SdkOptions {
  version: string;
  /** service.instance.id: the audit log's instance (host:pid). */
  instance: string;
  /** The Prometheus registry /metrics serves, exported over OTLP too (prom-bridge.ts); read at each export. */
  prometheus?: () => Registry | undefined;
  /** Where the SDK's errors and warnings go (failed exports), at most once a minute. */
  warn?: (message: string) => void;
}

/** The OpenTelemetry SDK, exporting over OTLP/HTTP with protobuf: only what the settings turn on is made. */
export class SdkTelemetry implements Telemetry {
  readonly traces: boolean;
  readonly metrics: boolean;
  readonly logs: boolean;
  private readonly tracerProvider?: BasicTracerProvider;
  private readonly meterProvider?: MeterProvider;
  private readonly loggerProvider?: LoggerProvider;
  private readonly instruments?: McpInstruments;
  private readonly auditLogger?: OtelLogger;
  /** The request whose audit event is being written (OtelRequestTrace.auditing): its log record's context. */
  private readonly ambient: { ctx?: Context } = {};

  constructor(settings: TelemetrySettings, opts: SdkOptions) {
    ({ traces: this.traces, metrics: this.metrics, logs: this.logs } = settings);
    if (opts.warn) {
      const warn = opts.warn;
      let last = -Infinity;
      let quiet = 0;
      const complain = (message: string, ...args: unknown[]) => {
        const now = Date.now();
        if (now - last < COMPLAINT_EVERY_MS) { quiet++; return; }
        last = now;
        const more = quiet > 0 ? ` (${quiet} more since the last one)` : '';
        quiet = 0;
        warn(`OpenTelemetry: ${[message, ...args].map(complaintText).join(' ').slice(0, 500)}${more}`);
      };
      const none = () => {};
      diag.setLogger({ error: complain, warn: complain, info: none, debug: none, verbose: none }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
    }
    // Ours first; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over them; the section's service_name over all.
    let resource = resourceFromAttributes({ 'service.name': 'toolgate', 'service.version': opts.version, 'service.instance.id': opts.instance })
      .merge(detectResources({ detectors: [envDetector] }));
    if (settings.serviceName) resource = resource.merge(resourceFromAttributes({ 'service.name': settings.serviceName }));
    const exporter = (path: string) => ({
      ...(settings.endpoint ? { url: `${settings.endpoint}${path}` } : {}),
      ...(Object.keys(settings.headers).length > 0 ? { headers: settings.headers } : {}),
    });
    if (settings.traces) {
      this.tracerProvider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(exporter('/v1/traces')))] });
    }
    if (settings.metrics) {
      const reader = new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter(exporter('/v1/metrics')),
        exportIntervalMillis: settings.metricsIntervalMs,
        exportTimeoutMillis: Math.min(30_000, settings.metricsIntervalMs),
        metricProducers: opts.prometheus ? [prometheusProducer(opts.prometheus)] : undefined,
      });
      this.meterProvider = new MeterProvider({ resource, readers: [reader] });
      const meter = this.meterProvider.getMeter('toolgate', opts.version);
      const histogram = (name: string, description: string) => meter.createHistogram(name, { unit: 's', description, advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
      this.instruments = {
        server: histogram('mcp.server.operation.duration', 'MCP request duration as toolgate saw it, from the client\'s request to toolgate\'s answer'),
        client: histogram('mcp.client.operation.duration', 'MCP request duration from toolgate forwarding it to the upstream\'s answer'),
      };
    }
    if (settings.logs) {
      this.loggerProvider = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter: new OTLPLogExporter(exporter('/v1/logs')) })] });
      this.auditLogger = this.loggerProvider.getLogger('toolgate.audit', opts.version);
    }
  }

  session(info: SessionInfo): SessionTelemetry | undefined {
    if (!this.tracerProvider && !this.instruments) return undefined;
    return new OtelSessionTelemetry(info, this.tracerProvider?.getTracer('toolgate'), this.instruments, this.ambient);
  }

  /**
   * An audit event (as AuditLog's onEvent tells it: never argument values) as a log record:
   * its fields as `toolgate.audit.*` attributes, the decision as severity (deny and error WARN).
   */
  auditEvent(event: Record<string, unknown>): void {
    if (!this.auditLogger) return;
    const attributes: Record<string, string | number | string[]> = {};
    for (const [key, value] of Object.entries(event)) {
      if (value === undefined || value === null) continue;
      if (typeof value === 'string' || typeof value === 'number') attributes[`toolgate.audit.${key}`] = value;
      else if (Array.isArray(value)) attributes[`toolgate.audit.${key}`] = value.map(String);
    }
    const decision = typeof event.decision === 'string' ? event.decision : undefined;
    const warn = decision === 'deny' || decision === 'rejected' || decision === 'timeout' || decision === 'error';
    const ts = typeof event.ts === 'string' ? Date.parse(event.ts) : NaN;
    this.auditLogger.emit({
      eventName: `toolgate.audit.${String(event.kind)}`,
      severityNumber: warn ? SeverityNumber.WARN : SeverityNumber.INFO,
      severityText: warn ? 'WARN' : 'INFO',
      body: auditBody(event),
      attributes,
      timestamp: Number.isFinite(ts) ? ts : Date.now(),
      // A call's own events carry its span (trace id and span id), so a log links to its trace.
      context: this.ambient.ctx ?? ROOT_CONTEXT,
    });
  }

  async shutdown(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const cap = new Promise<void>((resolve) => { timer = setTimeout(resolve, SHUTDOWN_MS); });
    await Promise.race([cap, Promise.allSettled([this.tracerProvider?.shutdown(), this.meterProvider?.shutdown(), this.loggerProvider?.shutdown()])]);
    clearTimeout(timer);
  }
}

/** What the SDK complains with, as one line: an error (often serialised as JSON) by its message, never its stack. */
function complaintText(x: unknown): string {
  if (x instanceof Error) return x.message.split('\n')[0];
  const text = String(x);
  if (text.startsWith('{')) {
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message.split('\n')[0];
    } catch { /* not JSON: the text itself */ }
  }
  return text.split('\n')[0];
}

/** One line for people: `call delete_file: deny (/tools/delete_file)`, `outcome: result`. */
function auditBody(e: Record<string, unknown>): string {
  const parts = [String(e.kind)];
  if (typeof e.tool === 'string') parts[0] += ` ${e.tool}`;
  if (typeof e.decision === 'string') parts.push(e.decision + (typeof e.rule === 'string' && e.rule ? ` (${e.rule})` : ''));
  if (typeof e.outcome === 'string') parts.push(e.outcome);
  return parts.join(': ');
}
