import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Histogram, type Span, type Tracer } from '@opentelemetry/api';
import { formatTraceparent, requestParent } from './context.js';
import type { RequestEnd, RequestTrace, SessionInfo, SessionTelemetry, TraceCarrier } from './types.js';

/** The MCP semantic conventions' operation histograms (seconds), when metrics are on. */
export interface McpInstruments {
  server: Histogram;
  client: Histogram;
}

/** Attribute values from clients and servers are cut at this length. */
const MAX_VALUE = 256;
const cut = (s: string) => (s.length > MAX_VALUE ? s.slice(0, MAX_VALUE) : s);

/** A session's request traces. */
export class OtelSessionTelemetry implements SessionTelemetry {
  /** The grant's label as an attribute value. */
  readonly grant: string;

  /**
   * `ambient.ctx` is the context of the audit event being written now (an audit append tells its
   * event synchronously), shared with the process's log records (sdk.ts).
   */
  constructor(readonly info: SessionInfo, readonly tracer: Tracer | undefined, readonly instruments: McpInstruments | undefined, readonly ambient: { ctx?: Context } = {}) {
    this.grant = cut(info.grant);
  }

  request(method: string, id: string | number, params: unknown, http: TraceCarrier | undefined, protocolVersion: string | undefined): RequestTrace {
    return new OtelRequestTrace(this, method, id, params, http, protocolVersion);
  }
}

/**
 * One request's spans: SERVER `tools/call NAME` (or the method), its children `toolgate.decide`,
 * `toolgate.approval` and the CLIENT span of the upstream call, whose context the upstream gets
 * in `_meta.traceparent`. Never an argument value: names, ids, the decision and its rule.
 */
class OtelRequestTrace implements RequestTrace {
  private readonly span?: Span;
  private readonly ctx: Context = ROOT_CONTEXT;
  private readonly started = performance.now();
  private readonly tracestate?: string;
  private decision?: Span;
  private approval?: Span;
  private upstream?: Span;
  private upstreamStarted?: number;
  private upstreamOutcome?: { outcome: string; seconds?: number; at: number };
  private name?: string;
  private knownTool = false;
  private ended = false;

  constructor(private readonly session: OtelSessionTelemetry, private readonly method: string, id: string | number, params: unknown, http: TraceCarrier | undefined, private readonly version: string | undefined) {
    const { tracer } = session;
    if (!tracer) return;
    const parent = requestParent(params, http);
    this.tracestate = parent?.tracestate;
    const parentCtx = parent ? trace.setSpanContext(ROOT_CONTEXT, { traceId: parent.traceId, spanId: parent.spanId, traceFlags: parent.traceFlags, isRemote: true }) : ROOT_CONTEXT;
    const { info } = session;
    const attributes: Attributes = {
      'mcp.method.name': method, 'jsonrpc.request.id': cut(String(id)), 'mcp.session.id': info.sessionId,
      'network.transport': info.transport, 'toolgate.server': info.server, 'toolgate.grant': session.grant,
    };
    if (version) attributes['mcp.protocol.version'] = version;
    this.span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parentCtx);
    this.ctx = trace.setSpan(parentCtx, this.span);
  }

  tool(name: string): void {
    this.name = cut(name);
    if (!this.span) return;
    this.span.updateName(`${this.method} ${this.name}`);
    this.span.setAttributes({ 'gen_ai.tool.name': this.name, 'gen_ai.operation.name': 'execute_tool' });
  }

  deciding(): void {
    if (this.span && !this.decision) this.decision = this.session.tracer!.startSpan('toolgate.decide', { kind: SpanKind.INTERNAL }, this.ctx);
  }

  decided(decision: string, rule: string, knownTool: boolean): void {
    this.knownTool = knownTool;
    if (!this.span) return;
    const attributes = { 'toolgate.decision': decision, 'toolgate.rule': cut(rule) };
    this.span.setAttributes(attributes);
    if (this.decision) {
      this.decision.setAttributes(attributes);
      this.decision.end();
      this.decision = undefined;
    }
  }

  held(): void {
    if (this.span && !this.approval) this.approval = this.session.tracer!.startSpan('toolgate.approval', { kind: SpanKind.INTERNAL }, this.ctx);
  }

  approvalId(id: string): void {
    this.span?.setAttribute('toolgate.approval.id', id);
    this.approval?.setAttribute('toolgate.approval.id', id);
  }

  approvalEnded(outcome: string): void {
    if (!this.approval) return;
    this.approval.setAttribute('toolgate.approval.outcome', outcome);
    this.approval.end();
    this.approval = undefined;
  }

  forward(params: unknown): unknown {
    this.upstreamStarted = performance.now();
    if (!this.span) return params;
    const given = params !== null && typeof params === 'object' && !Array.isArray(params) ? params as Record<string, unknown> : {};
    this.approvalEnded('approved');
    const attributes: Attributes = { 'mcp.method.name': this.method, 'toolgate.server': this.session.info.server };
    if (this.name !== undefined) Object.assign(attributes, { 'gen_ai.tool.name': this.name, 'gen_ai.operation.name': 'execute_tool' });
    const name = this.name === undefined ? this.method : `${this.method} ${this.name}`;
    this.upstream = this.session.tracer!.startSpan(name, { kind: SpanKind.CLIENT, attributes }, this.ctx);
    const sc = this.upstream.spanContext();
    const meta = given._meta !== null && typeof given._meta === 'object' && !Array.isArray(given._meta) ? given._meta as Record<string, unknown> : {};
    const traced: Record<string, unknown> = { ...meta, traceparent: formatTraceparent(sc.traceId, sc.spanId, sc.traceFlags) };
    if (this.tracestate) traced.tracestate = this.tracestate;
    else delete traced.tracestate;
    return { ...given, _meta: traced };
  }

  auditing<T>(write: () => T): T {
    if (!this.span) return write();
    const { ambient } = this.session;
    const before = ambient.ctx;
    ambient.ctx = this.ctx;
    try {
      return write();
    } finally {
      ambient.ctx = before;
    }
  }

  upstreamEnded(outcome: string, seconds?: number): void {
    if (!this.upstreamOutcome) this.upstreamOutcome = { outcome, seconds, at: performance.now() };
  }

  end(how: RequestEnd): void {
    if (this.ended) return;
    this.ended = true;
    const errorType = how.kind === 'error' ? String(how.code) : how.kind === 'cancelled' ? 'cancelled' : how.isError ? 'tool_error' : undefined;
    this.endUpstream(how);
    const { instruments } = this.session;
    if (instruments) {
      const attributes = this.metricAttributes();
      if (errorType) attributes['error.type'] = errorType;
      instruments.server.record((performance.now() - this.started) / 1000, attributes);
    }
    if (!this.span) return;
    this.decision?.end();
    this.approvalEnded(how.kind === 'cancelled' ? 'cancelled' : 'ended');
    if (how.kind === 'error') this.span.setAttribute('rpc.response.status_code', String(how.code));
    if (errorType) {
      this.span.setAttribute('error.type', errorType);
      this.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.span.end();
  }

  private endUpstream(how: RequestEnd): void {
    if (this.upstreamStarted === undefined) return;
    const out = this.upstreamOutcome;
    const errorType = !out
      ? (how.kind === 'error' ? String(how.code) : how.kind === 'cancelled' ? 'cancelled' : how.isError ? 'tool_error' : undefined)
      : out.outcome === 'error' && how.kind === 'error' ? String(how.code)
        : ({ is_error: 'tool_error', timeout: 'timeout', cancelled: 'cancelled', unreachable: 'unreachable', unanswered: 'unanswered', error: 'jsonrpc_error' } as Record<string, string>)[out.outcome];
    const { instruments } = this.session;
    if (instruments) {
      const attributes = this.metricAttributes();
      if (errorType) attributes['error.type'] = errorType;
      instruments.client.record(out?.seconds ?? ((out?.at ?? performance.now()) - this.upstreamStarted) / 1000, attributes);
    }
    if (!this.upstream) return;
    if (errorType) {
      this.upstream.setAttribute('error.type', errorType);
      this.upstream.setStatus({ code: SpanStatusCode.ERROR });
    }
    this.upstream.end(out ? performance.timeOrigin + out.at : undefined);
    this.upstream = undefined;
  }

  /** Bounded attributes: a tool name only when the policy knows it (as toolgate_calls_total). */
  private metricAttributes(): Attributes {
    const attributes: Attributes = { 'mcp.method.name': this.method, 'network.transport': this.session.info.transport, 'toolgate.server': this.session.info.server };
    if (this.name !== undefined) attributes['gen_ai.tool.name'] = this.knownTool ? this.name : '(unlisted)';
    if (this.version) attributes['mcp.protocol.version'] = this.version;
    return attributes;
  }
}
