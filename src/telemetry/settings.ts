import { z } from 'zod';

/** The `telemetry:` section of toolgate.yaml. The standard OTEL_* variables fill in what it leaves out. */
export const TelemetrySchema = z.strictObject({
  endpoint: z.url().optional()
    .describe('the OTLP/HTTP base URL, e.g. http://collector:4318 (/v1/traces, /v1/metrics, /v1/logs are added); default OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318'),
  headers: z.record(z.string(), z.string()).default({}).describe('sent with every export, e.g. authorization: "Bearer ${OTLP_TOKEN}"'),
  service_name: z.string().min(1).optional().describe('service.name; default OTEL_SERVICE_NAME, else toolgate'),
  traces: z.boolean().default(true).describe('a trace per request, joined to the caller\'s and passed on to the upstream'),
  metrics: z.boolean().default(true).describe('mcp.server.operation.duration, mcp.client.operation.duration and toolgate\'s Prometheus metrics over OTLP'),
  logs: z.boolean().default(false).describe('every audit event as an OTLP log record'),
  metrics_interval: z.string().regex(/^\d+(s|m)$/, 'a duration such as 15s or 1m').default('60s'),
}).describe('OpenTelemetry export over OTLP/HTTP (protobuf); off without this section or OTEL_*_EXPORTER=otlp');

export type TelemetryConfig = z.output<typeof TelemetrySchema>;

/** What to export and where: resolved from the section and the environment. */
export interface TelemetrySettings {
  traces: boolean;
  metrics: boolean;
  logs: boolean;
  /** The base URL from the section; without it the exporters read OTEL_EXPORTER_OTLP_(signal_)ENDPOINT themselves. */
  endpoint?: string;
  headers: Record<string, string>;
  serviceName?: string;
  metricsIntervalMs: number;
  /** Things said once at start (an OTLP protocol other than http/protobuf asked for, …). */
  warnings: string[];
}

type Env = Record<string, string | undefined>;

/** Whether OTEL_<SIGNAL>_EXPORTER asks for otlp (true), for none (false), or says nothing (undefined). */
function exporterVar(env: Env, signal: string): boolean | undefined {
  const value = env[`OTEL_${signal}_EXPORTER`]?.trim().toLowerCase();
  if (!value) return undefined;
  const names = value.split(',').map((s) => s.trim());
  return names.includes('otlp') ? true : names.includes('none') ? false : undefined;
}

/**
 * The signals to export, or undefined when none is on: each is on when the section says so or,
 * without a section, when OTEL_<SIGNAL>_EXPORTER names otlp; OTEL_<SIGNAL>_EXPORTER=none and
 * OTEL_SDK_DISABLED=true turn them off either way.
 */
export function telemetrySettings(section: TelemetryConfig | undefined, env: Env = process.env): TelemetrySettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const on = (signal: string, fromSection: boolean | undefined) => {
    const asked = exporterVar(env, signal);
    return asked === false ? false : section ? fromSection === true : asked === true;
  };
  const traces = on('TRACES', section?.traces);
  const metrics = on('METRICS', section?.metrics);
  const logs = on('LOGS', section?.logs);
  if (!traces && !metrics && !logs) return undefined;
  const warnings: string[] = [];
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', 'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL']) {
    const protocol = env[name]?.trim();
    if (protocol && protocol !== 'http/protobuf') warnings.push(`${name}=${protocol} is not supported: toolgate exports OTLP over HTTP with protobuf (http/protobuf)`);
  }
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  const fromSection = section ? durationMs(section.metrics_interval) : undefined;
  return {
    traces, metrics, logs,
    endpoint: section?.endpoint?.replace(/\/+$/, ''),
    headers: section?.headers ?? {},
    serviceName: section?.service_name,
    metricsIntervalMs: fromSection ?? (Number.isInteger(interval) && interval > 0 ? interval : 60_000),
    warnings,
  };
}

function durationMs(text: string): number {
  const m = /^(\d+)(s|m)$/.exec(text)!;
  return Math.max(1, Number(m[1])) * (m[2] === 's' ? 1000 : 60_000);
}
