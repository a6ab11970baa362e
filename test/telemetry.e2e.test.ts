import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { until } from './helpers/approvals.js';
import { OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { Serve } from './helpers/serve.js';
import { BIN, FIXTURES, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * OpenTelemetry through the built CLI: `toolgate serve` and `toolgate run` export over OTLP/HTTP
 * (the SDK's own protobuf exporters) to a receiver in this test that decodes with the official
 * OTLP definitions; a stdio upstream records the `_meta` every request reached it with.
 */

const TRACE_SERVER = join(FIXTURES, 'trace-server.mjs');
const SECRET_ARG = 'argument-value-that-must-not-leave-7f3a';
const AGENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const AGENT_SPAN = '00f067aa0ba902b7';
const ADMIN = 'admin-token-for-the-telemetry-test-0123';

const hex = (n: number) => [...Array(n)].map(() => Math.floor(Math.random() * 16).toString(16)).join('');

/** The OTEL_* variables of a process exporting everything to the receiver, quickly. */
function otelEnv(receiver: OtlpReceiver): Record<string, string> {
  return {
    OTEL_TRACES_EXPORTER: 'otlp', OTEL_METRICS_EXPORTER: 'otlp', OTEL_LOGS_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'toolgate-under-test',
    OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BLRP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '300',
  };
}

const recorded = (file: string) => readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { method: string; name?: string; meta: Record<string, unknown> | null });

const childOf = (spans: ReceivedSpan[], parent: ReceivedSpan, name: string) => spans.find((s) => s.traceId === parent.traceId && s.parentSpanId === parent.spanId && s.name === name);

describe('OpenTelemetry from toolgate serve', () => {
  let receiver: OtlpReceiver;
  let serve: Serve;
  let mcp: string;
  let record: string;
  let sessionId: string;

  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(mcp, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...(sessionId ? { 'mcp-session-id': sessionId } : {}), ...headers },
      body: JSON.stringify(body),
    });
    sessionId ??= res.headers.get('mcp-session-id')!;
    const text = await res.text();
    return text ? JSON.parse(text.startsWith('{') ? text : /^data: (.+)$/m.exec(text)![1]) : undefined;
  };

  before(async () => {
    receiver = await OtlpReceiver.start();
    const dir = tempDir();
    record = join(dir, 'record.jsonl');
    writeFileSync(record, '');
    const policy = writePolicy(dir, { version: '1', default: 'allow', tools: { read_note: { action: 'allow' }, write_note: { action: 'approve' }, delete_file: { action: 'deny' } } });
    const config = join(dir, 'toolgate.json');
    // The telemetry section, not OTEL_*_EXPORTER (toolgate run below takes those); the batch delays still come from OTEL_BSP_*/OTEL_BLRP_*.
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: `sqlite:${join(dir, 'state.db')}`, admin: { token: ADMIN },
      telemetry: { endpoint: receiver.endpoint, service_name: 'toolgate-under-test', logs: true, metrics_interval: '1s' },
      servers: { notes: { command: process.execPath, args: [TRACE_SERVER], env: { RECORD_FILE: record }, policy, auth: 'none' } },
    }));
    serve = new Serve(['-c', config, '--json'], testEnv(dir, { OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_BLRP_SCHEDULE_DELAY: '100' }));
    const started = await serve.started();
    mcp = started.servers[0].mcp[0];
    await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'otel-test', version: '1' } } });
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  });

  after(async () => {
    await serve?.stop();
    await receiver?.close();
  });

  it('a call with an HTTP traceparent is a server span in that trace, with the decision and the upstream call as children, and the upstream gets the upstream span as its parent', async () => {
    const answer = await post(
      { jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'read_note', arguments: { name: SECRET_ARG } } },
      { traceparent: `00-${AGENT_TRACE}-${AGENT_SPAN}-01`, tracestate: 'vendor=opaque' },
    );
    assert.equal(answer.result.content[0].text, 'read_note done');
    const server = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === AGENT_TRACE && s.kind === 2 && s.name === 'tools/call read_note'), 'server span of the call');
    assert.equal(server.parentSpanId, AGENT_SPAN);
    assert.deepEqual(
      { ...server.attributes },
      {
        ...server.attributes,
        'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'read_note', 'gen_ai.operation.name': 'execute_tool', 'jsonrpc.request.id': 'call-1',
        'mcp.session.id': sessionId, 'mcp.protocol.version': '2025-06-18', 'network.transport': 'tcp',
        'toolgate.decision': 'allow', 'toolgate.server': 'notes', 'toolgate.grant': 'anonymous',
      },
    );
    assert.equal(server.attributes['error.type'], undefined);
    assert.equal(server.resource['service.name'], 'toolgate-under-test');

    const decide = await receiver.waitFor(() => childOf(receiver.spans, server, 'toolgate.decide'), 'decision span');
    assert.equal(decide.attributes['toolgate.decision'], 'allow');
    const upstream = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === AGENT_TRACE && s.parentSpanId === server.spanId && s.kind === 3), 'upstream (client) span');
    assert.equal(upstream.name, 'tools/call read_note');
    assert.equal(upstream.attributes['gen_ai.tool.name'], 'read_note');

    const call = recorded(record).find((r) => r.method === 'tools/call' && r.name === 'read_note')!;
    assert.equal(call.meta?.traceparent, `00-${AGENT_TRACE}-${upstream.spanId}-01`, 'the upstream joins the agent\'s trace under toolgate\'s upstream span');
    assert.equal(call.meta?.tracestate, 'vendor=opaque');
  });

  it('_meta.traceparent in the request names the parent (the 2026-07-28 convention), and a denial carries its decision and rule and reaches no upstream', async () => {
    const trace = hex(32);
    const parent = hex(16);
    const answer = await post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'delete_file', arguments: { path: SECRET_ARG }, _meta: { traceparent: `00-${trace}-${parent}-01` } } });
    assert.equal(answer.result.isError, true);
    const server = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 2), 'server span of the denied call');
    assert.equal(server.parentSpanId, parent);
    assert.equal(server.name, 'tools/call delete_file');
    assert.equal(server.attributes['toolgate.decision'], 'deny');
    assert.equal(server.attributes['toolgate.rule'], '/tools/delete_file/action');
    assert.equal(server.attributes['error.type'], 'tool_error');
    assert.equal(server.attributes['jsonrpc.request.id'], '7');
    assert.equal(server.status, 2);
    assert.equal(childOf(receiver.spans, server, 'toolgate.decide')?.attributes['toolgate.rule'], '/tools/delete_file/action');
    assert.equal(receiver.spans.some((s) => s.traceId === trace && s.kind === 3), false, 'a denied call has no upstream span');
    assert.equal(recorded(record).some((r) => r.name === 'delete_file'), false);
  });

  it('a call held for approval has an approval span with the approval id, then the upstream call once approved', async () => {
    const trace = hex(32);
    const answered = post({ jsonrpc: '2.0', id: 'held-1', method: 'tools/call', params: { name: 'write_note', arguments: { name: 'n', text: SECRET_ARG } } }, { traceparent: `00-${trace}-${hex(16)}-01` });
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
    const api = new URL('/api/approvals', mcp).toString();
    const approval = await until(async () => {
      const list = await (await fetch(`${api}?status=pending`, { headers: admin })).json() as { id: string; tool: string }[];
      return list.find((a) => a.tool === 'write_note');
    }, 'the pending approval');
    const decided = await fetch(`${api}/${approval.id}/approve`, { method: 'POST', headers: admin, body: '{}' });
    assert.equal(decided.status, 200);
    assert.equal((await answered).result.content[0].text, 'write_note done');

    const server = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 2), 'server span of the held call');
    assert.equal(server.attributes['toolgate.decision'], 'approve');
    assert.equal(server.attributes['toolgate.approval.id'], approval.id);
    const wait = await receiver.waitFor(() => childOf(receiver.spans, server, 'toolgate.approval'), 'approval span');
    assert.equal(wait.attributes['toolgate.approval.id'], approval.id);
    assert.equal(wait.attributes['toolgate.approval.outcome'], 'approved');
    const upstream = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 3 && s.parentSpanId === server.spanId), 'upstream span after approval');
    assert.equal(recorded(record).find((r) => r.name === 'write_note')?.meta?.traceparent, `00-${trace}-${upstream.spanId}-01`);
  });

  it('the legacy SSE transport takes the traceparent header of the POST too', async () => {
    const trace = hex(32);
    const parent = hex(16);
    const client = new Client({ name: 'sse-agent', version: '1' });
    await client.connect(new SSEClientTransport(new URL('/sse/notes', mcp), { requestInit: { headers: { traceparent: `00-${trace}-${parent}-01` } } }));
    try {
      const answer = await client.callTool({ name: 'read_note', arguments: { name: 'n' } });
      assert.equal((answer.content as { text: string }[])[0].text, 'read_note done');
    } finally {
      await client.close();
    }
    const server = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 2 && s.name === 'tools/call read_note'), 'server span of the SSE call');
    assert.equal(server.parentSpanId, parent);
    const upstream = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 3 && s.parentSpanId === server.spanId), 'upstream span of the SSE call');
    assert.ok(recorded(record).some((r) => r.method === 'tools/call' && r.meta?.traceparent === `00-${trace}-${upstream.spanId}-01`));
  });

  it('lists are traced too, and the upstream gets their trace context', async () => {
    const trace = hex(32);
    const answer = await post({ jsonrpc: '2.0', id: 'list-1', method: 'tools/list' }, { traceparent: `00-${trace}-${hex(16)}-01` });
    assert.ok(answer.result.tools.length > 0);
    const server = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 2), 'server span of tools/list');
    assert.equal(server.name, 'tools/list');
    assert.equal(server.attributes['mcp.method.name'], 'tools/list');
    const upstream = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 3), 'upstream span of tools/list');
    const listed = recorded(record).filter((r) => r.method === 'tools/list').map((r) => r.meta?.traceparent);
    assert.ok(listed.includes(`00-${trace}-${upstream.spanId}-01`));
  });

  it('the MCP operation histograms and toolgate\'s own counters arrive as OTLP metrics, with the conventions\' names and units', async () => {
    const server = await receiver.waitFor(() => receiver.metrics.find((m) => m.name === 'mcp.server.operation.duration' && m.points.some((p) => p.attributes['toolgate.decision'] === undefined && p.attributes['gen_ai.tool.name'] === 'delete_file')), 'mcp.server.operation.duration');
    assert.equal(server.kind, 'histogram');
    assert.equal(server.unit, 's');
    const denied = server.points.find((p) => p.attributes['gen_ai.tool.name'] === 'delete_file')!;
    assert.equal(denied.attributes['mcp.method.name'], 'tools/call');
    assert.equal(denied.attributes['error.type'], 'tool_error');
    assert.ok(denied.count! >= 1);
    const client = await receiver.waitFor(() => receiver.metrics.find((m) => m.name === 'mcp.client.operation.duration' && m.points.some((p) => p.attributes['gen_ai.tool.name'] === 'read_note')), 'mcp.client.operation.duration');
    assert.equal(client.unit, 's');
    assert.equal(client.points.some((p) => p.attributes['gen_ai.tool.name'] === 'delete_file'), false, 'a denied call never went upstream');
    const calls = await receiver.waitFor(() => receiver.metrics.find((m) => m.name === 'toolgate_calls' && m.points.some((p) => p.attributes.decision === 'deny')), 'toolgate_calls from the Prometheus registry');
    assert.equal(calls.kind, 'sum');
    assert.equal(calls.points.find((p) => p.attributes.decision === 'deny' && p.attributes.tool === 'delete_file')?.value, 1);
    // A Prometheus histogram keeps its buckets: per-bucket counts that add up to its count.
    const upstreamSeconds = await receiver.waitFor(() => receiver.metrics.find((m) => m.name === 'toolgate_upstream_seconds' && m.points.length > 0), 'toolgate_upstream_seconds');
    assert.equal(upstreamSeconds.kind, 'histogram');
    assert.equal(upstreamSeconds.unit, 's');
    for (const p of upstreamSeconds.points) {
      assert.equal(p.bucketCounts!.reduce((a, b) => a + b, 0), p.count);
      assert.equal(p.bucketCounts!.length, p.explicitBounds!.length + 1);
    }
  });

  it('audit events arrive as OTLP log records, and no argument value is in any span, metric or log record', async () => {
    const denial = await receiver.waitFor(() => receiver.logs.find((l) => l.attributes['toolgate.audit.decision'] === 'deny'), 'the denial\'s audit log record');
    assert.equal(denial.eventName, 'toolgate.audit.call');
    assert.equal(denial.severityText, 'WARN');
    assert.equal(denial.attributes['toolgate.audit.tool'], 'delete_file');
    assert.equal(denial.attributes['toolgate.audit.rule'], '/tools/delete_file/action');
    // The call's audit events carry its trace: the denial's record is in the denied call's span.
    const denied = receiver.spans.find((s) => s.kind === 2 && s.name === 'tools/call delete_file')!;
    assert.deepEqual([denial.traceId, denial.spanId], [denied.traceId, denied.spanId]);
    const allowed = receiver.spans.find((s) => s.kind === 2 && s.traceId === AGENT_TRACE)!;
    const outcome = await receiver.waitFor(() => receiver.logs.find((l) => l.eventName === 'toolgate.audit.outcome' && l.traceId === AGENT_TRACE), 'the allowed call\'s outcome record');
    assert.equal(outcome.spanId, allowed.spanId);
    assert.equal(outcome.attributes['toolgate.audit.outcome'], 'result');
    const everything = JSON.stringify([receiver.spans, receiver.metrics, receiver.logs]);
    assert.equal(everything.includes(SECRET_ARG), false);
    assert.ok(receiver.requests.every((r) => r.contentType === 'application/x-protobuf'));
  });
});

describe('OpenTelemetry from toolgate run (stdio)', () => {
  it('honours _meta.traceparent from a stdio client and passes toolgate\'s upstream span on in _meta', async () => {
    const receiver = await OtlpReceiver.start();
    const dir = tempDir();
    const record = join(dir, 'record.jsonl');
    writeFileSync(record, '');
    const env = testEnv(dir, { ...otelEnv(receiver), RECORD_FILE: record });
    const child = spawn(process.execPath, [BIN, 'run', '--state', `sqlite:${join(dir, 'state.db')}`, '--', process.execPath, TRACE_SERVER], { env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    const answered = (id: number) => receiver.waitFor(() => out.split('\n').some((l) => l.includes(`"id":${id},`)), `answer ${id}`);
    const send = (m: unknown) => child.stdin.write(JSON.stringify(m) + '\n');
    try {
      send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stdio-agent', version: '1' } } });
      await answered(1);
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const trace = hex(32);
      const parent = hex(16);
      send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_note', arguments: { name: 'x' }, _meta: { traceparent: `00-${trace}-${parent}-01`, progressToken: 'p1' } } });
      await answered(2);
      const server = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 2), 'server span of the stdio call');
      assert.equal(server.parentSpanId, parent);
      assert.equal(server.attributes['network.transport'], 'pipe');
      assert.equal(server.attributes['gen_ai.tool.name'], 'read_note');
      const upstream = await receiver.waitFor(() => receiver.spans.find((s) => s.traceId === trace && s.kind === 3 && s.parentSpanId === server.spanId), 'upstream span');
      const call = recorded(record).find((r) => r.method === 'tools/call')!;
      assert.equal(call.meta?.traceparent, `00-${trace}-${upstream.spanId}-01`);
      assert.equal(call.meta?.progressToken, 'p1', 'the rest of _meta is passed on as it came');
    } finally {
      child.stdin.end();
      await new Promise((resolve) => child.once('exit', resolve));
      await receiver.close();
    }
  });
});

describe('OpenTelemetry with the collector away', () => {
  it('calls are answered as ever, the failed export is logged, and serve still stops cleanly', async () => {
    const away = await OtlpReceiver.start();
    const endpoint = away.endpoint;
    await away.close(); // nothing listens there now
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: `sqlite:${join(dir, 'state.db')}`, telemetry: { endpoint },
      servers: { notes: { command: process.execPath, args: [TRACE_SERVER], policy, auth: 'none' } },
    }));
    const serve = new Serve(['-c', config, '--json'], testEnv(dir, { OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '1000' }));
    try {
      const url = (await serve.started()).servers[0].mcp[0];
      const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) });
      const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
      await init.text();
      const call = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_note', arguments: {} } }) });
      assert.match(await call.text(), /read_note done/);
      await until(() => /OpenTelemetry: /.test(serve.stderr), 'the failed export in the log');
      assert.match(serve.stderr, /OpenTelemetry: connect ECONNREFUSED/);
      assert.ok(!serve.stderr.includes('    at '), 'the error, not its stack');
      assert.equal(await serve.stop(), 0);
    } finally {
      await serve.stop();
    }
  });
});
