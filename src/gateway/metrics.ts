import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ResultFacts } from '../results/index.js';
import type { ApprovalStore, StateHealth } from '../state/types.js';
import { CallCounter, CallHistogram } from './call-metrics.js';
import type { ConnectionGuard } from './connections.js';
import type { EventBudget } from './event-budget.js';
import type { PoolStats } from '../pool/upstreams.js';

/** Prometheus metrics of one gateway. Tool labels are only names the policy knows, never arbitrary input. */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly calls = new CallCounter({ name: 'toolgate_calls_total', help: 'tools/call decisions', labelNames: ['server', 'tool', 'decision'], registers: [this.registry] });
  readonly decisionSeconds = new CallHistogram({
    name: 'toolgate_decision_seconds', help: 'time to decide a tools/call', labelNames: ['server'], registers: [this.registry],
    buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05],
  });
  readonly upstreamSeconds = new CallHistogram({
    name: 'toolgate_upstream_seconds', help: 'time from forwarding a tools/call to its answer', labelNames: ['server', 'outcome'], registers: [this.registry],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  });
  readonly sessions = new Gauge({ name: 'toolgate_sessions', help: 'open client sessions', labelNames: ['server'], registers: [this.registry] });
  readonly authFailures = new Counter({ name: 'toolgate_auth_failures_total', help: 'requests refused for a missing, unknown, revoked or expired token', labelNames: ['server'], registers: [this.registry] });
  /** Read at each scrape: kept up to date from the state store's changes, never a scan of it. */
  pendingCount: () => number = () => 0;
  readonly pendingApprovals: Gauge = new Gauge({
    name: 'toolgate_pending_approvals', help: 'calls waiting for a human', registers: [this.registry],
    collect: () => { this.pendingApprovals.set(this.pendingCount()); },
  });
  /** Read at each scrape from the same pending set: when the oldest pending call was held (ms), or undefined. */
  oldestPending: () => number | undefined = () => undefined;
  readonly oldestPendingSeconds: Gauge = new Gauge({
    name: 'toolgate_oldest_pending_approval_seconds', help: 'how long the oldest call waiting for a human has waited (0 when none waits)', registers: [this.registry],
    collect: () => {
      const oldest = this.oldestPending();
      this.oldestPendingSeconds.set(oldest === undefined ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
    },
  });
  readonly approvalDecisions = new Counter({ name: 'toolgate_approval_decisions_total', help: 'approvals that ended, by outcome: approved, denied, timeout (then used or unused)', labelNames: ['outcome'], registers: [this.registry] });
  readonly approvalSeconds = new Histogram({
    name: 'toolgate_approval_decision_seconds', help: 'time from holding a call to its decision', labelNames: ['outcome'], registers: [this.registry],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
  });
  readonly resultRedactions = new Counter({ name: 'toolgate_result_redactions_total', help: 'secrets redacted from what servers sent back (tool results, resources, prompts, errors, logs), by kind', labelNames: ['server', 'kind'], registers: [this.registry] });
  readonly resultActions = new Counter({ name: 'toolgate_result_actions_total', help: 'tools/call results the result policy changed: cut, structured_dropped, withheld, flagged', labelNames: ['server', 'action'], registers: [this.registry] });
  readonly policyRejected = new Counter({ name: 'toolgate_policy_rejected_total', help: 'policy file versions that failed to load; the last good version stayed in use', labelNames: ['policy'], registers: [this.registry] });

  /**
   * The pending approvals, as a set kept up to date by every change (made in any process) and read
   * once at start, so that a scrape costs nothing; outcomes and time to decision counted as they
   * happen. Returns the function that stops following.
   */
  followApprovals(store: ApprovalStore, onError: (err: Error) => void): () => void {
    // id → when the call was held: the age of the oldest is computed at scrape, never on the call path.
    const pending = new Map<string, number>();
    const ended = new Set<string>();
    this.pendingCount = () => pending.size;
    this.oldestPending = () => {
      let oldest: number | undefined;
      for (const at of pending.values()) if (oldest === undefined || at < oldest) oldest = at;
      return oldest;
    };
    const stop = store.watch((a) => {
      if (a.status === 'pending') {
        if (!ended.has(a.id)) pending.set(a.id, a.requestedAt);
        return;
      }
      pending.delete(a.id);
      if (ended.size < 10_000) ended.add(a.id);
      this.approvalDecisions.inc({ outcome: a.status });
      if (a.decidedAt !== undefined && (a.status === 'approved' || a.status === 'denied' || a.status === 'timeout')) {
        this.approvalSeconds.observe({ outcome: a.status }, (a.decidedAt - a.requestedAt) / 1000);
      }
    });
    // What was pending before this process watched; ended ones heard meanwhile stay out.
    void Promise.resolve(store.list({ status: 'pending', limit: 100_000 })).then((list) => {
      for (const a of list) if (!ended.has(a.id)) pending.set(a.id, a.requestedAt);
      ended.clear();
    }, onError);
    return stop;
  }

  /** The state store's health as /healthz reports it, read at each scrape: 1 ok, 0 unreachable or its state lost. */
  watchState(kind: string, health: () => StateHealth | undefined): void {
    new Gauge({
      name: 'toolgate_state_up', help: 'whether the state store answers and its state is whole (1) or not (0: Redis unreachable, its state lost, or an evicting maxmemory_policy set after start; /healthz says degraded)', labelNames: ['kind'], registers: [this.registry],
      collect() { this.set({ kind }, (health()?.status ?? 'ok') === 'ok' ? 1 : 0); },
    });
  }

  readonly poolExhausted = new Counter({ name: 'toolgate_pool_exhausted_total', help: 'requests refused with the retryable pool-exhausted error (all upstream sessions busy past pool.queue_timeout, or the queue full)', labelNames: ['server'], registers: [this.registry] });

  readonly poolDropped = new Counter({ name: 'toolgate_pool_dropped_total', help: 'messages of pooled upstream sessions that named no request in flight and had no sole lease holder: dropped (kind: answer, progress, notification), or a server request refused -32601 (request)', labelNames: ['server', 'kind'], registers: [this.registry] });

  /** The pools of upstream sessions, read at each scrape: sessions open (or starting), leased, requests in flight on them, and requests waiting, by server. */
  watchPools(stats: () => PoolStats[]): void {
    const gauge = (name: string, help: string, read: (s: PoolStats) => number) => new Gauge({
      name, help, labelNames: ['server'], registers: [this.registry],
      collect() {
        this.reset();
        for (const s of stats()) this.set({ server: s.server }, read(s));
      },
    });
    gauge('toolgate_pool_sessions', 'pooled upstream sessions open or starting', (s) => s.size);
    gauge('toolgate_pool_busy', 'pooled upstream sessions leased by at least one request', (s) => s.busy);
    gauge('toolgate_pool_requests', 'requests in flight on pooled upstream sessions (up to pool.concurrency per session)', (s) => s.requests);
    gauge('toolgate_pool_queued', 'requests waiting for a pooled upstream session', (s) => s.queued);
  }

  /** Streamable HTTP events kept for resumption, and connections open and refused. */
  watchBuffers(budget: EventBudget, connections: ConnectionGuard): void {
    const gauge = (name: string, help: string, read: () => number) => new Gauge({ name, help, registers: [this.registry], collect() { this.set(read()); } });
    gauge('toolgate_resume_buffer_bytes', 'bytes of SSE events kept for clients that resume a dropped stream (Last-Event-ID)', () => budget.bytes);
    gauge('toolgate_resume_buffer_events', 'SSE events kept for clients that resume a dropped stream', () => budget.events);
    gauge('toolgate_connections', 'open client connections', () => connections.connections);
    new Gauge({
      name: 'toolgate_connections_refused', help: 'connections and requests refused by connections.max or max_per_address, since start', labelNames: ['cap'], registers: [this.registry],
      collect() { for (const [cap, n] of Object.entries(connections.refused)) this.set({ cap }, n); },
    });
  }

  /** What the result policy did to one server message (kinds and counts; label values come from the detector's kinds and fixed actions). */
  resultFacts(server: string, redacted: ReadonlyMap<string, number>, facts: ResultFacts | undefined): void {
    for (const [kind, n] of redacted) this.resultRedactions.inc({ server, kind }, n);
    if (!facts) return;
    if (facts.cut) this.resultActions.inc({ server, action: 'cut' });
    if (facts.structuredDropped) this.resultActions.inc({ server, action: 'structured_dropped' });
    if (facts.withheld) this.resultActions.inc({ server, action: 'withheld' });
    if (facts.flagged.length > 0) this.resultActions.inc({ server, action: 'flagged' });
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'toolgate_process_' });
  }
}
