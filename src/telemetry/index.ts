import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import { telemetrySettings, type TelemetryConfig } from './settings.js';
import type { Telemetry } from './types.js';

export type { RequestEnd, RequestTrace, SessionInfo, SessionTelemetry, Telemetry, TraceCarrier } from './types.js';
export { httpCarrier } from './context.js';
export { TelemetrySchema, telemetrySettings, type TelemetryConfig, type TelemetrySettings } from './settings.js';

export interface StartOptions {
  /** The Prometheus registry /metrics serves, exported over OTLP too; read at each export (it may come later). */
  prometheus?: () => Registry | undefined;
  /** Told each warning (an unsupported OTLP protocol asked for; the SDK's failed exports, at most once a minute). */
  warn?: (message: string) => void;
}

/**
 * The process's telemetry, or undefined when no signal is on (the default): then the SDK is not
 * loaded at all and sessions get no telemetry, so the call path is what it was without it.
 */
export async function startTelemetry(section: TelemetryConfig | undefined, opts: StartOptions = {}, env: Record<string, string | undefined> = process.env): Promise<Telemetry | undefined> {
  const settings = telemetrySettings(section, env);
  if (!settings) return undefined;
  for (const w of settings.warnings) opts.warn?.(w);
  const { SdkTelemetry } = await import('./sdk.js');
  const meta = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  // service.instance.id is the audit log's instance, so a trace and its audit rows name the same process.
  return new SdkTelemetry(settings, { version: meta.version, instance: `${hostname()}:${process.pid}`, prometheus: opts.prometheus, warn: opts.warn });
}
