import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { pino } from 'pino';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { PolicySession } from '../src/proxy/session.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { parseTraceparent, requestParent } from '../src/telemetry/context.js';
import { telemetrySettings } from '../src/telemetry/settings.js';
import { OtelSessionTelemetry } from '../src/telemetry/tracing.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('W3C traceparent from untrusted callers', () => {
  it('takes a valid one and refuses what the W3C format forbids', () => {
    assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a=b'), { traceId: TRACE, spanId: SPAN, traceFlags: 1, tracestate: 'a=b' });
    // A later version may add fields after the flags; version 00 may not, ff is invalid.
    assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-00-more`)?.traceId, TRACE);
    for (const bad of [
      `00-${TRACE}-${SPAN}-01-more`, `ff-${TRACE}-${SPAN}-01`, `00-${TRACE.toUpperCase()}-${SPAN}-01`,
      `00-${'0'.repeat(32)}-${SPAN}-01`, `00-${TRACE}-${'0'.repeat(16)}-01`, `00-${TRACE}-${SPAN}`, 42, undefined, `00-${TRACE}-${SPAN}-01${' '.repeat(300)}`,
    ]) assert.equal(parseTraceparent(bad), undefined, String(bad));
    assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'bad\nstate')?.tracestate, undefined, 'a tracestate with control characters is dropped');
  });

  it('prefers the request\'s _meta.traceparent to the HTTP header, and falls back to the header', () => {
    const header = { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` };
    assert.equal(requestParent({ _meta: { traceparent: `00-${TRACE}-${SPAN}-01` } }, header)?.traceId, TRACE);
    assert.equal(requestParent({ _meta: { traceparent: 'garbage' } }, header)?.traceId, '1'.repeat(32));
    assert.equal(requestParent(undefined, undefined), undefined);
  });
});

describe('telemetry settings', () => {
  it('is off without a telemetry section or OTEL_*_EXPORTER=otlp', () => {
    assert.equal(telemetrySettings(undefined, {}), undefined);
    assert.equal(telemetrySettings(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), undefined);
  });

  it('turns signals on from the environment, the section, and off with none or OTEL_SDK_DISABLED', () => {
    const env = telemetrySettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: '5000' })!;
    assert.deepEqual([env.traces, env.metrics, env.logs, env.metricsIntervalMs, env.endpoint], [true, false, false, 5000, undefined]);
    const section = { traces: true, metrics: true, logs: false, headers: {}, metrics_interval: '15s', endpoint: 'http://collector:4318/' };
    const fromSection = telemetrySettings(section, { OTEL_METRICS_EXPORTER: 'none' })!;
    assert.deepEqual([fromSection.traces, fromSection.metrics, fromSection.logs, fromSection.metricsIntervalMs, fromSection.endpoint], [true, false, false, 15_000, 'http://collector:4318']);
    assert.equal(telemetrySettings(section, { OTEL_SDK_DISABLED: 'true' }), undefined);
  });

  it('says that only http/protobuf is spoken when another OTLP protocol is asked for', () => {
    const s = telemetrySettings(undefined, { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })!;
    assert.match(s.warnings[0], /grpc is not supported: toolgate exports OTLP over HTTP with protobuf/);
  });
});

function session(telemetry?: OtelSessionTelemetry) {
  const r = validatePolicyObject({ version: '1', default: 'allow', tools: { echo: {} } });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const toClient: Json[] = [];
  const toServer: Json[] = [];
  const s = new PolicySession({
    engine: new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() }),
    identity: { sessionId: 's1', serverName: 'srv', grant: { label: 'ci', tags: [] } },
    log: pino({ level: 'silent' }),
    telemetry,
    toClient: (m) => toClient.push(m),
    toServer: (m) => toServer.push(m),
  });
  return { s, toClient, toServer };
}

function traced() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const telemetry = new OtelSessionTelemetry({ sessionId: 's1', server: 'srv', grant: 'ci', transport: 'pipe' }, provider.getTracer('test'), undefined);
  return { exporter, telemetry };
}

describe('a session and its traces', () => {
  it('without telemetry forwards the client\'s _meta exactly as it came', () => {
    const { s, toServer } = session();
    const meta = { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'x=y', progressToken: 3 };
    s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, _meta: meta } });
    assert.deepEqual((toServer[0].params as Json)._meta, meta);
  });

  it('with telemetry replaces only the traceparent, keeping the rest of _meta and the caller\'s tracestate', () => {
    const { exporter, telemetry } = traced();
    const { s, toServer } = session(telemetry);
    s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, _meta: { traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'x=y', progressToken: 3 } } });
    const meta = (toServer[0].params as Json)._meta as Record<string, string>;
    assert.deepEqual(exporter.getFinishedSpans().map((sp) => sp.name), ['toolgate.decide'], 'only the decision has ended before the answer');
    assert.match(meta.traceparent, new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    assert.notEqual(meta.traceparent.slice(36, 52), SPAN);
    assert.deepEqual([meta.tracestate, meta.progressToken], ['x=y', 3]);
  });

  it('a second request with an id in flight is refused without ending the first one\'s trace', () => {
    const { exporter, telemetry } = traced();
    const { s, toClient } = session(telemetry);
    s.fromClient({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    s.fromClient({ jsonrpc: '2.0', id: 5, method: 'tools/list' });
    assert.match(String((toClient[0].error as Json).message), /already in use/);
    assert.equal(exporter.getFinishedSpans().some((sp) => sp.name === 'tools/call echo'), false, 'the call is still in flight');
    s.fromServer({ jsonrpc: '2.0', id: 5, result: { content: [] } });
    const spans = exporter.getFinishedSpans();
    const server = spans.find((sp) => sp.name === 'tools/call echo' && sp.kind === 1);
    assert.ok(server, spans.map((sp) => `${sp.name}/${sp.kind}`).join(', '));
    assert.equal(spans.filter((sp) => sp.name === 'tools/list').length, 0, 'the refused request made no span');
  });

  it('a cancelled call ends its spans with error.type cancelled', () => {
    const { exporter, telemetry } = traced();
    const { s } = session(telemetry);
    s.fromClient({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    s.fromClient({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } });
    const server = exporter.getFinishedSpans().find((sp) => sp.kind === 1);
    assert.equal(server?.attributes['error.type'], 'cancelled');
    assert.equal(exporter.getFinishedSpans().find((sp) => sp.kind === 2)?.attributes['error.type'], 'cancelled');
  });
});

describe('the OTLP headers of the telemetry section', () => {
  it('are toolgate\'s own secrets: a server configured to receive one is refused', async () => {
    const { configSecrets, secretLeak } = await import('../src/upstream-env/index.js');
    const secrets = configSecrets({ telemetry: { headers: { 'x-honeycomb-team': 'hc-key-0123456789abcdef' } } }, undefined, {});
    assert.match(secretLeak('app', { command: 'app-server', env: { TEAM_KEY: 'hc-key-0123456789abcdef' } }, secrets, {}) ?? '', /telemetry\.headers\.x-honeycomb-team/);
  });
});
