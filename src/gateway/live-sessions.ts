import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { Approvals } from '../approvals/index.js';
import type { AuditLog } from '../audit/index.js';
import { Engine, type CompiledPolicy } from '../engine/index.js';
import type { Logger } from '../log.js';
import { RequestStates } from '../input/request-state.js';
import { pinDriftFor } from '../proxy/pin-drift.js';
import { PinGuard } from '../proxy/pins.js';
import { compileObject, PENDING_POLICY, recommendedPolicyFeed } from '../proxy/recommended.js';
import { PolicySession } from '../proxy/session.js';
import { knownRule } from '../proxy/session-calls.js';
import type { Upstream } from '../proxy/upstream.js';
import type { Grant, StateStore } from '../state/types.js';
import type { Telemetry } from '../telemetry/index.js';
import { durationToMs, type GatewayConfig, type ServerConfig } from '../config/gateway.js';
import type { Grants } from '../grants/grants.js';
import { HttpError } from '../http/errors.js';
import { sourceOf } from './listings.js';
import type { GatewayMetrics } from './metrics.js';
import { StreamableSession, type ClientChannel } from './streamable.js';
import { FlowTracker } from '../flows/tracker.js';
import type { UpstreamPools } from '../pool/upstreams.js';
import { startUpstream } from './upstream-start.js';

export interface Live {
  id: string;
  server: string;
  grant: Grant;
  engine: Engine;
  policyFile?: string;
  /** A StreamableSession, or a wrapper around the legacy SSE transport kept in `sse`. */
  channel: ClientChannel;
  sse?: SSEServerTransport;
  upstream: Upstream;
  session: PolicySession;
  lastActive: number;
  /** Until its upstream has started: not yet a session anyone can use or evict. */
  starting: boolean;
}

export const ANONYMOUS: Omit<Grant, 'server'> = { id: 'anonymous', label: 'anonymous', tags: [], createdAt: new Date(0).toISOString() };

/** How long a client whose new session was refused for capacity is asked to wait. */
const CAPACITY_RETRY_SECONDS = '30';

export interface LiveSessionsOptions {
  config: () => GatewayConfig;
  /** The gateway's sessions by id, shared with it and with its policy files. */
  sessions: Map<string, Live>;
  state: StateStore;
  audit: AuditLog;
  log: Logger;
  metrics: GatewayMetrics;
  approvals: Approvals;
  grants: Grants;
  /** The compiled policy for a new session (see PolicyFiles.policyFor). */
  policyFor: (server: ServerConfig, grant: Grant) => CompiledPolicy | null;
  telemetry?: Telemetry;
  /** Pools of upstream sessions (issue 26): a modern client's session, or a pooled legacy one, leases from them. */
  pools?: UpstreamPools;
}

/** The gateway's client sessions: admitted under the caps, opened with their upstream, closed, reaped when idle. */
export class LiveSessions {
  private readonly sessions: Map<string, Live>;
  /** Sessions being closed, so that stopping waits for their upstreams to be gone. */
  readonly closing = new Set<Promise<void>>();

  /** Signs and checks input_required states with the state store's key (any instance of a fleet checks any other's). */
  private readonly requestStates: RequestStates;
  /** What each agent touched, in the state store: an agent's calls on every server and instance count together (SPEC 11). */
  private readonly flows: FlowTracker;

  constructor(private readonly opts: LiveSessionsOptions) {
    this.sessions = opts.sessions;
    this.requestStates = new RequestStates(opts.state.requestStates);
    this.flows = new FlowTracker(opts.state.flows, opts.log);
  }

  private get config(): GatewayConfig {
    return this.opts.config();
  }

  private get metrics(): GatewayMetrics {
    return this.opts.metrics;
  }

  private get approvals(): Approvals {
    return this.opts.approvals;
  }

  private get grants(): Grants {
    return this.opts.grants;
  }

  /**
   * Makes room for a new session of this grant on this server: at a cap, the least recently used
   * idle session of the grant (or the server) is closed; when none is idle, the session is refused.
   */
  private admit(name: string, grant: Grant): void {
    const { max, max_per_grant: perGrant } = this.config.sessions;
    const ofServer = (l: Live) => l.server === name;
    const ofGrant = (l: Live) => ofServer(l) && l.grant.id === grant.id;
    if (this.count(ofGrant) >= perGrant && !this.evictIdle(ofGrant, 'sessions.max_per_grant was reached')) {
      throw new HttpError(429, `this grant has ${perGrant} sessions open on "${name}" (sessions.max_per_grant), each with a call in flight: end one (HTTP DELETE) or retry later`, { 'retry-after': CAPACITY_RETRY_SECONDS });
    }
    if (this.count(ofServer) >= max && !this.evictIdle(ofServer, 'sessions.max was reached')) {
      throw new HttpError(503, `"${name}" has ${max} sessions open (sessions.max), each with a call in flight: retry later`, { 'retry-after': CAPACITY_RETRY_SECONDS });
    }
  }

  private count(which: (l: Live) => boolean): number {
    let n = 0;
    for (const l of this.sessions.values()) if (which(l)) n++;
    return n;
  }

  private evictIdle(which: (l: Live) => boolean, why: string): boolean {
    let lru: Live | undefined;
    for (const l of this.sessions.values()) {
      if (which(l) && !l.starting && l.session.inFlight === 0 && !l.channel.busy?.() && (!lru || l.lastActive < lru.lastActive)) lru = l;
    }
    if (lru) void this.close(lru, `the least recently used idle session: ${why}`);
    return lru !== undefined;
  }

  async open(id: string, name: string, server: ServerConfig, grant: Grant, channelFor: (session: PolicySession) => ClientChannel, clientEra: 'legacy' | 'modern' = 'legacy'): Promise<Live> {
    const { log, state, audit } = this.opts;
    this.admit(name, grant);
    const policy = this.opts.policyFor(server, grant);
    const engine = new Engine({ policy: policy ?? compileObject(PENDING_POLICY, 'pending'), counters: state.counters, flags: state.flags, failOpen: server.fail_open ?? this.config.fail_open });
    let upstream: Upstream;
    try {
      // A pooled client's requests lease the pool's upstream sessions; any other client gets its own.
      upstream = this.opts.pools?.view(name, server, grant, clientEra) ?? startUpstream(name, server, id, log);
    } catch (err) {
      throw new HttpError(503, `cannot start the server "${name}": ${(err as Error).message}`, { 'retry-after': CAPACITY_RETRY_SECONDS });
    }
    // This session's metric series, found once (the histograms' label sets are the server and its outcomes).
    const decisionSeconds = this.metrics.decisionSeconds.child(name);
    const upstreamSeconds = new Map<string, { observe(value: number): void }>();
    const session: PolicySession = new PolicySession({
      engine,
      audit,
      auditArgs: server.audit_args,
      identity: { sessionId: id, serverName: name, grant: { id: grant.id, label: grant.label, tags: grant.tags } },
      log,
      pins: new PinGuard(state.pins, name, log, { source: sourceOf(server), older: [name], drift: pinDriftFor(state.oauth) }),
      callTimeoutMs: durationToMs(server.call_timeout),
      passthroughMethods: server.passthrough_methods,
      clientEra,
      approvals: this.approvals,
      requestStates: this.requestStates,
      tasks: state.oauth,
      telemetry: this.opts.telemetry?.session({ sessionId: id, server: name, grant: grant.label, transport: 'tcp' }),
      flows: this.flows,
      grantProblem: () => this.grantProblem(live.grant),
      onToolsListed: policy ? undefined : recommendedPolicyFeed(engine, name, () => session, log),
      observe: {
        decision: (tool, decision, rule, seconds) => {
          this.metrics.calls.inc(name, knownRule(rule) ? tool : '(unlisted)', decision);
          decisionSeconds.observe(seconds);
        },
        upstream: (_tool, outcome, seconds) => {
          let series = upstreamSeconds.get(outcome);
          if (!series) upstreamSeconds.set(outcome, (series = this.metrics.upstreamSeconds.child(name, outcome)));
          series.observe(seconds);
        },
        result: (_tool, redacted, facts) => this.metrics.resultFacts(name, redacted, facts),
      },
      toClient: (m, raw) => {
        // An answer is activity too: a slow start or a slow call must not make the session look idle.
        if (!Object.hasOwn(m, 'method')) live.lastActive = Date.now();
        channel.send(m, raw, session.relatedRequest(m));
      },
      toServer: (m) => { upstream.send(m).catch((err: Error) => session.deliveryFailed(m, err)); },
      withdraw: (requestId) => upstream.withdraw?.(requestId) ?? false,
      onBatch: (batch) => channel.expectBatch?.(batch),
    });
    const channel = channelFor(session);
    const live: Live = { id, server: name, grant, engine, policyFile: policy ? (grant.policy ?? server.policy) : undefined, channel, upstream, session, lastActive: Date.now(), starting: true };
    // Counted from now, so that concurrent initializes cannot pass a cap together.
    this.sessions.set(id, live);
    try {
      await upstream.started;
    } catch (err) {
      this.sessions.delete(id);
      throw new HttpError(503, `cannot start the server "${name}": ${(err as Error).message}`, { 'retry-after': CAPACITY_RETRY_SECONDS });
    }
    live.starting = false;
    if (this.sessions.get(id) !== live) throw new HttpError(503, 'the session was closed while its server started (the gateway is stopping or the server was removed)');
    upstream.onmessage = (m, raw) => session.fromServer(m, raw);
    upstream.onclose = (reason) => {
      if (this.sessions.get(id) !== live) return; // closed by the gateway: its upstream was asked to go
      log.warn({ server: name, session: id }, `upstream gone: ${reason}`);
      session.upstreamClosed(reason);
      // Its client learns on the next request (404) and can start a new session; the slot is free now.
      void this.close(live, `the upstream is gone: ${reason}`);
    };
    this.metrics.sessions.set({ server: name }, this.count((l) => l.server === name));
    log.info({ server: name, session: id, grant: grant.label }, 'session opened');
    return live;
  }

  /**
   * Why a grant may no longer act now, or null (asked when a held call is released): a stored
   * grant (static or OAuth) is read again, so revocation and expiry while the call waited count;
   * a token from an identity provider cannot be revoked here, only expire.
   */
  private async grantProblem(grant: Grant): Promise<string | null> {
    const now = Date.now();
    const expired = (g: Grant) => g.expiresAt !== undefined && Date.parse(g.expiresAt) <= now;
    if (grant.id === ANONYMOUS.id) return null;
    if (grant.id.startsWith('jwt:')) return expired(grant) ? 'the token of the grant expired while the call waited' : null;
    const current = (await this.grants.list()).find((g) => g.id === grant.id);
    if (!current) return 'the grant no longer exists';
    if (current.revokedAt) return 'the grant was revoked while the call waited';
    if (expired(current)) return 'the grant expired while the call waited';
    return null;
  }

  close(live: Live, why: string): Promise<void> {
    if (this.sessions.get(live.id) !== live) return Promise.resolve();
    this.sessions.delete(live.id);
    this.metrics.sessions.set({ server: live.server }, this.count((l) => l.server === live.server));
    this.opts.log.info({ server: live.server, session: live.id }, `session closed: ${why}`);
    live.session.upstreamClosed(why);
    const done = Promise.allSettled([live.channel.close(), live.upstream.close()]).then(() => { this.closing.delete(done); });
    this.closing.add(done);
    return done;
  }

  /**
   * Closes sessions without requests (and no call in flight) for idle_timeout, or for the shorter
   * idle_timeout_unused when no GET stream is open: a client that exits without DELETE leaves one.
   */
  reap(): void {
    const now = Date.now();
    const idle = now - durationToMs(this.config.sessions.idle_timeout);
    const unused = now - durationToMs(this.config.sessions.idle_timeout_unused);
    for (const live of this.sessions.values()) {
      if (live.starting || live.session.inFlight > 0 || live.channel.busy?.()) continue;
      const streaming = live.channel instanceof StreamableSession ? live.channel.streaming : true;
      if (live.lastActive < idle) void this.close(live, 'idle');
      else if (!streaming && live.lastActive < unused) void this.close(live, 'unused: no GET stream and no request for sessions.idle_timeout_unused');
    }
  }
}
