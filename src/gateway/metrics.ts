import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one gateway. Tool labels are only names the policy knows, never arbitrary input. */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly calls = new Counter({ name: 'toolgate_calls_total', help: 'tools/call decisions', labelNames: ['server', 'tool', 'decision'], registers: [this.registry] });
  readonly decisionSeconds = new Histogram({
    name: 'toolgate_decision_seconds', help: 'time to decide a tools/call', labelNames: ['server'], registers: [this.registry],
    buckets: [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05],
  });
  readonly upstreamSeconds = new Histogram({
    name: 'toolgate_upstream_seconds', help: 'time from forwarding a tools/call to its answer', labelNames: ['server', 'outcome'], registers: [this.registry],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
  });
  readonly sessions = new Gauge({ name: 'toolgate_sessions', help: 'open client sessions', labelNames: ['server'], registers: [this.registry] });
  readonly authFailures = new Counter({ name: 'toolgate_auth_failures_total', help: 'requests refused for a missing, unknown, revoked or expired token', labelNames: ['server'], registers: [this.registry] });
  /** Read at each scrape: pending approvals live in the state store, shared with other processes. */
  pendingCount: () => number | Promise<number> = () => 0;
  readonly pendingApprovals: Gauge = new Gauge({
    name: 'toolgate_pending_approvals', help: 'calls waiting for a human', registers: [this.registry],
    collect: async () => { this.pendingApprovals.set(await this.pendingCount()); },
  });
  readonly approvalDecisions = new Counter({ name: 'toolgate_approval_decisions_total', help: 'approvals that ended, by outcome: approved, denied, timeout (then used or unused)', labelNames: ['outcome'], registers: [this.registry] });
  readonly approvalSeconds = new Histogram({
    name: 'toolgate_approval_decision_seconds', help: 'time from holding a call to its decision', labelNames: ['outcome'], registers: [this.registry],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
  });
  readonly policyRejected = new Counter({ name: 'toolgate_policy_rejected_total', help: 'policy file versions that failed to load; the last good version stayed in use', labelNames: ['policy'], registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'toolgate_process_' });
  }
}

/** Label sets seen by one server's metrics past which their cache starts over (tool names matched by a glob can be many). */
const CHILDREN_MAX = 1000;

/**
 * One server's per-call metrics with each label set resolved once: prom-client hashes and checks
 * a label object on every call otherwise.
 */
export class ServerMetrics {
  private readonly calls = new Map<string, Counter.Internal>();
  private readonly upstream = new Map<string, Histogram.Internal<string>>();
  private readonly decisionSeconds: Histogram.Internal<string>;

  constructor(private readonly metrics: GatewayMetrics, private readonly server: string) {
    this.decisionSeconds = metrics.decisionSeconds.labels({ server });
  }

  decided(tool: string, decision: string, seconds: number): void {
    const key = `${tool}\x1f${decision}`;
    let child = this.calls.get(key);
    if (!child) {
      if (this.calls.size >= CHILDREN_MAX) this.calls.clear();
      child = this.metrics.calls.labels({ server: this.server, tool, decision });
      this.calls.set(key, child);
    }
    child.inc();
    this.decisionSeconds.observe(seconds);
  }

  answered(outcome: string, seconds: number): void {
    let child = this.upstream.get(outcome);
    if (!child) {
      if (this.upstream.size >= CHILDREN_MAX) this.upstream.clear();
      child = this.metrics.upstreamSeconds.labels({ server: this.server, outcome });
      this.upstream.set(outcome, child);
    }
    child.observe(seconds);
  }
}
