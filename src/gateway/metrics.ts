import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CallCounter, CallHistogram } from './call-metrics.js';

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
