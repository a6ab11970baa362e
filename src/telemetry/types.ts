/**
 * What the call path sees of OpenTelemetry: a session's telemetry makes one RequestTrace per
 * client request. With telemetry off there is none (`SessionOptions.telemetry` is undefined), so
 * the call path pays one property read per request; the SDK is not even loaded (index.ts).
 */

/** W3C trace context as it came with a request (the HTTP headers, or the request's `_meta`). */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** How a request ended for its client, told from the answer toolgate sent (or its absence). */
export type RequestEnd =
  | { kind: 'result'; isError: boolean }
  | { kind: 'error'; code: number }
  | { kind: 'cancelled' };

/** One client request: a SERVER span, with children for the decision, the approval wait and the upstream call. */
export interface RequestTrace {
  /** A tools/call's tool name, once its params were checked. */
  tool(name: string): void;
  /** The policy decision starts (a child span until `decided`). */
  deciding(): void;
  /** The decision: `toolgate.decision` (allow, deny, approve, shadow_deny) and the rule that made it. */
  decided(decision: string, rule: string, knownTool: boolean): void;
  /** The call is held for a person (a child span until `approvalEnded`). */
  held(): void;
  approvalId(id: string): void;
  approvalEnded(outcome: string): void;
  /**
   * The request goes upstream: starts the CLIENT span and returns the params to send, with that
   * span as `_meta.traceparent` (a new object; `params` is not changed); without traces, `params`.
   */
  forward(params: unknown): unknown;
  /** The upstream answered (or not): `seconds` is the observation toolgate_upstream_seconds got, when it got one. */
  upstreamEnded(outcome: string, seconds?: number): void;
  /** The client's answer went out (or the request was cancelled): ends every span still open. */
  end(how: RequestEnd): void;
  /** Runs `write` (an audit append) with this request's span as the context of the log records it makes. */
  auditing<T>(write: () => T): T;
}

export interface SessionTelemetry {
  /**
   * A request arrived: `params` is the request's params (its `_meta.traceparent` comes first),
   * `http` the trace context of the HTTP request that carried it, if any.
   */
  request(method: string, id: string | number, params: unknown, http: TraceCarrier | undefined, protocolVersion: string | undefined): RequestTrace;
}

export interface SessionInfo {
  sessionId: string;
  server: string;
  grant: string;
  /** `pipe` for stdio clients (toolgate run), `tcp` for HTTP. */
  transport: 'pipe' | 'tcp';
}

/** The process's telemetry (toolgate serve or run), present only when some signal is on. */
export interface Telemetry {
  readonly traces: boolean;
  readonly metrics: boolean;
  readonly logs: boolean;
  /** Per-session request traces and the MCP operation metrics; undefined when neither traces nor metrics are on. */
  session(info: SessionInfo): SessionTelemetry | undefined;
  /** An audit event as an OTLP log record (logs on). */
  auditEvent(event: Record<string, unknown>): void;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}
