import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiHowTo, Approvals, cliHowTo } from '../approvals/index.js';
import type { AuditLog } from '../audit/index.js';
import { sameSecret } from '../auth/http.js';
import { McpAuth } from '../auth/index.js';
import type { Logger } from '../log.js';
import type { StateStore } from '../state/types.js';
import type { Telemetry } from '../telemetry/index.js';
import { configSecrets, secretLeak } from '../upstream-env/index.js';
import { Dashboard } from '../web/index.js';
import { durationToMs, isLoopback, serverNamed, sizeToBytes, type GatewayConfig } from '../config/gateway.js';
import { AdminError, handleAdmin, isAdmin } from './admin.js';
import { ClientAuth } from './client-auth.js';
import { ClientAddresses } from '../http/client-address.js';
import { ConnectionGuard } from './connections.js';
import { EventBudget } from './event-budget.js';
import { Grants } from '../grants/grants.js';
import { HttpError, sendHttpError } from '../http/errors.js';
import { Listings } from './listings.js';
import { closeListener, Lifecycle } from './lifecycle.js';
import { LiveSessions, type Live } from './live-sessions.js';
import { PolicyFiles } from './policies.js';
import { GatewayMetrics } from './metrics.js';
import { readJsonBody } from './body.js';
import { PerGrantSessions, type ModernSessions } from './modern.js';
import { McpEndpoints } from './mcp-endpoints.js';
import { UpstreamPools } from '../pool/upstreams.js';
import { startUpstream } from './upstream-start.js';

export interface GatewayOptions {
  config: GatewayConfig;
  state: StateStore;
  audit: AuditLog;
  log: Logger;
  /** What the approve command printed for people needs to reach this gateway's state, e.g. `-c toolgate.yaml`. */
  stateFlag?: string;
  /** First delay between webhook retries (default 1 s). */
  webhookBackoffMs?: number;
  /** The state store's DSN, whose password (if any) no upstream may get. */
  stateDsn?: string;
  /** OpenTelemetry, when the configuration or OTEL_* turned it on. */
  telemetry?: Telemetry;
}

function listenHost(config: GatewayConfig): string {
  return config.listen.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
}

/** A name from the request path; malformed percent-encoding is the client's error. */
function pathName(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, 'Bad Request: malformed percent-encoding in the path');
  }
}

/** How often open admin event streams are checked against sign-outs elsewhere and session expiry. */
const STREAM_CHECK_MS = 5_000;

/**
 * `toolgate serve`: one HTTP listener, many upstream servers at /mcp/<server>. Each legacy client
 * session gets its own policy session and (unless its server pools all clients) its own upstream
 * connection; 2026-07-28 clients' requests lease pooled upstream sessions (src/pool/); grants
 * authenticate every request; Host and Origin are checked against DNS rebinding.
 */
export class Gateway {
  readonly metrics = new GatewayMetrics();
  readonly approvals: Approvals;
  private readonly stopApprovalMetrics: () => void;
  private config: GatewayConfig;
  private readonly grants: Grants;
  private readonly auth: McpAuth;
  private readonly sessions = new Map<string, Live>();
  private readonly live: LiveSessions;
  private readonly policies: PolicyFiles;
  private readonly clientAuth: ClientAuth;
  private readonly http: Server;
  private reaper?: NodeJS.Timeout;
  private port = 0;
  private allowedHosts = new Set<string>();
  private localOrigins = new Set<string>();
  private readonly dashboard: Dashboard;
  private readonly listings = new Listings();
  /** Admin responses still open after their handler returned: event streams, ended when the gateway stops. */
  private readonly streams = new Set<ServerResponse>();
  /** For each open stream, whether what opened it (the admin token, a dashboard session) still holds. */
  private readonly streamAuth = new Map<ServerResponse, () => Promise<boolean>>();
  private streamCheck?: NodeJS.Timeout;
  private addresses: ClientAddresses;
  private readonly connections: ConnectionGuard;
  private readonly eventBudget: EventBudget;
  private readonly lifecycle: Lifecycle;
  /** The internal sessions that carry 2026-07-28 clients' stateless requests. */
  private readonly modern: ModernSessions;
  /** /mcp/<server> and /sse/<server>. */
  private readonly mcp: McpEndpoints;

  constructor(private readonly opts: GatewayOptions) {
    this.config = opts.config;
    this.dashboard = new Dashboard({ config: () => this.config, audit: opts.audit, store: opts.state.oauth, signedOut: () => this.recheckStreams() });
    this.grants = new Grants(opts.state.grants);
    this.approvals = new Approvals({
      store: opts.state.approvals,
      audit: opts.audit,
      log: opts.log,
      howTo: opts.state.kind === 'memory' ? apiHowTo() : cliHowTo(opts.stateFlag),
      onHeld: (a, notice) => opts.log.info({ server: a.server, tool: a.tool, approval: a.id }, notice),
      webhook: (server) => this.config.servers[server]?.approvals?.webhook,
      webhookBackoffMs: opts.webhookBackoffMs,
      retentionMs: durationToMs(opts.config.approvals.retention),
    });
    this.stopApprovalMetrics = this.metrics.followApprovals(opts.state.approvals, (err) => opts.log.warn({ err: err.message }, 'cannot read pending approvals for metrics'));
    this.auth = new McpAuth({ config: () => this.config, grants: this.grants, store: opts.state.oauth, audit: opts.audit, log: opts.log });
    this.clientAuth = new ClientAuth({ auth: this.auth, metrics: this.metrics, audit: opts.audit });
    this.policies = new PolicyFiles({ config: () => this.config, sessions: this.sessions, metrics: this.metrics, audit: opts.audit, log: opts.log });
    const pools = new UpstreamPools({
      log: opts.log,
      start: (name, server, id) => startUpstream(name, server, id, opts.log),
      onExhausted: (server) => this.metrics.poolExhausted.inc({ server }),
      onDropped: (server, kind) => this.metrics.poolDropped.inc({ server, kind }),
    });
    this.metrics.watchPools(() => pools.stats());
    this.live = new LiveSessions({
      config: () => this.config, sessions: this.sessions, state: opts.state, audit: opts.audit, log: opts.log,
      metrics: this.metrics, approvals: this.approvals, grants: this.grants, policyFor: (server, grant) => this.policies.policyFor(server, grant),
      telemetry: opts.telemetry, pools,
    });
    this.modern = new PerGrantSessions({ log: opts.log, live: this.live, isOpen: (live) => this.sessions.get(live.id) === live });
    this.addresses = new ClientAddresses(opts.config.trusted_proxies);
    const { sessions, connections } = opts.config;
    this.eventBudget = new EventBudget(sizeToBytes(sessions.resume_buffer), sizeToBytes(sessions.resume_buffer_total));
    this.connections = new ConnectionGuard(() => this.connectionLimits(), () => this.addresses);
    this.metrics.watchBuffers(this.eventBudget, this.connections);
    this.metrics.watchState(opts.state.kind, () => opts.state.health?.());
    // Node checks its header and request deadlines this often (its default, 30 s, lets a flood sit).
    const checkEvery = Math.max(250, Math.min(1000, durationToMs(connections.headers_timeout) / 2));
    this.http = createServer({ connectionsCheckingInterval: checkEvery }, (req, res) => {
      if (!this.connections.request(req, res, this.addresses.of(req))) return;
      if (this.lifecycle.stopping) res.setHeader('connection', 'close');
      this.handle(req, res).catch((err: Error) => {
        if (err instanceof HttpError) return sendHttpError(res, err);
        opts.log.error({ err: err.message }, 'request failed');
        sendHttpError(res, new HttpError(500, 'internal error'));
      });
    });
    this.connections.attach(this.http);
    this.lifecycle = new Lifecycle({
      state: opts.state, log: opts.log, sessions: this.sessions, http: this.http,
      warnings: () => this.policies.policyWarnings(), servers: () => Object.keys(this.config.servers).length,
    });
    this.mcp = new McpEndpoints({
      config: () => this.config, sessions: this.sessions, live: this.live, lifecycle: this.lifecycle, modern: this.modern,
      eventBudget: this.eventBudget, clientAuth: this.clientAuth, readBody: (req) => this.readBody(req), log: opts.log, telemetry: opts.telemetry,
    });
  }

  private connectionLimits() {
    const c = this.config.connections;
    const requestTimeoutMs = durationToMs(c.request_timeout);
    return {
      max: c.max, maxPerAddress: c.max_per_address, headersTimeoutMs: Math.min(durationToMs(c.headers_timeout), requestTimeoutMs), requestTimeoutMs,
      keepAliveMs: durationToMs(c.keep_alive),
    };
  }

  get address(): { host: string; port: number } {
    return { host: listenHost(this.config), port: this.port };
  }

  get servers(): GatewayConfig['servers'] {
    return this.config.servers;
  }

    get sessionCount(): number {
    return this.sessions.size;
  }

  async start(): Promise<{ host: string; port: number }> {
    const host = listenHost(this.config);
    const port = Number(/:(\d+)$/.exec(this.config.listen)![1]);
    this.checkOpenServers(this.config);
    this.checkSecrets(this.config);
    this.policies.loadPolicies(this.config);
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => resolve());
    });
    this.port = (this.http.address() as AddressInfo).port;
    this.applyAllowedHosts();
    const { idle_timeout: idle, idle_timeout_unused: unused } = this.config.sessions;
    this.reaper = setInterval(() => this.live.reap(), Math.min(durationToMs(idle), durationToMs(unused), 30_000));
    this.reaper.unref();
    void this.lifecycle.load();
    return this.address;
  }

  /** The Host names (and their origins) this listener answers to: its own, loopback's, allowed_hosts. */
  private applyAllowedHosts(): void {
    const host = listenHost(this.config);
    const hosts = new Set([`localhost:${this.port}`, `127.0.0.1:${this.port}`, `[::1]:${this.port}`, `${host}:${this.port}`]);
    // A name without a port is the name clients use for this listener (or, behind a proxy, without one).
    for (const h of this.config.allowed_hosts.map((x) => x.toLowerCase())) {
      hosts.add(h);
      if (!/:\d+$/.test(h)) hosts.add(`${h}:${this.port}`);
    }
    this.allowedHosts = hosts;
    this.localOrigins = new Set([...hosts].flatMap((h) => [`http://${h}`, `https://${h}`]));
  }

  get shutdownGrace(): string {
    return this.config.shutdown.grace;
  }

  /** Resolves once the gateway is ready (/readyz 200): its grants and kill switches are loaded. */
  get ready(): Promise<void> {
    return this.lifecycle.load();
  }

  /** Servers without grants are for local use: refused on a non-loopback listener, warned about otherwise. */
  private checkOpenServers(config: GatewayConfig): void {
    const host = listenHost(config);
    for (const [name, s] of Object.entries(config.servers)) {
      if (s.auth !== 'none') continue;
      if (!isLoopback(host)) throw new Error(`server "${name}" has auth: none, which is refused on the non-loopback address ${host}`);
      this.opts.log.warn({ server: name }, 'auth: none — anyone who can reach the listener can use this server; its grant limits count as "anonymous"');
    }
  }

  /** A configuration that would hand one of toolgate's own secrets to an upstream is refused. */
  private checkSecrets(config: GatewayConfig): void {
    const secrets = configSecrets(config, this.opts.stateDsn ?? config.state);
    for (const [name, s] of Object.entries(config.servers)) {
      const leak = secretLeak(name, s, secrets);
      if (leak) throw new Error(leak);
    }
  }

  /**
   * Applies a new configuration: added servers appear, removed ones end their sessions. The
   * listener stays where it is; a configuration it would refuse at start is refused here too.
   */
  setConfig(config: GatewayConfig): { server: string; sessions: number }[] {
    config = { ...config, listen: this.config.listen };
    const previous = this.config;
    this.checkOpenServers(config);
    this.checkSecrets(config);
    this.policies.loadPolicies(config);
    this.addresses = new ClientAddresses(config.trusted_proxies);
    this.config = config;
    void this.recheckStreams();
    // A name added to allowed_hosts applies at once, as trusted_proxies does (it used to wait for a restart).
    if (this.port) this.applyAllowedHosts();
    this.connections.apply(this.http);
    for (const live of this.sessions.values()) if (!serverNamed(config, live.server)) void this.live.close(live, 'the server was removed from the configuration');
    return keptSessions(previous, config, [...this.sessions.values()]);
  }

  /**
   * A clean stop (SIGTERM, SIGINT): not ready, no new connections or requests, calls held for
   * approval answered "restarting, call again", calls in flight given `shutdown.grace` to finish
   * (then cancelled upstream); then stop().
   */
  async drain(): Promise<void> {
    const { grace } = this.config.shutdown;
    await this.lifecycle.drain(durationToMs(grace), grace);
    await this.stop();
  }

  async stop(): Promise<void> {
    clearInterval(this.reaper);
    clearInterval(this.streamCheck);
    for (const res of this.streams) res.end();
    this.stopApprovalMetrics();
    this.approvals.close();
    this.policies.stop();
    for (const l of [...this.sessions.values()]) void this.live.close(l, 'the gateway is stopping');
    // Sessions that closed just before the stop too: their children must be gone when this returns.
    await Promise.allSettled([...this.live.closing]);
    this.clientAuth.flush();
    if (this.http.listening || this.lifecycle.stopping) await closeListener(this.http);
  }

  /** Why the policy file's latest version was refused (the previous one still decides), when it was. */
  policyProblem(file: string): { problem: string; since: string } | undefined {
    return this.policies.policyProblem(file);
  }

  /** Ends every admin event stream whose admin token or dashboard session no longer opens the admin API. */
  private async recheckStreams(): Promise<void> {
    for (const [res, holds] of [...this.streamAuth]) {
      if (!(await holds().catch(() => false))) { this.streamAuth.delete(res); res.end(); }
    }
    if (this.streamAuth.size === 0 && this.streamCheck) { clearInterval(this.streamCheck); this.streamCheck = undefined; }
  }

  /** DNS-rebinding protection: the Host must be this listener, an Origin must be a local one or an allowed one. */
  private checkHostAndOrigin(req: IncomingMessage): void {
    const host = req.headers.host ?? '';
    if (!this.allowedHosts.has(host.toLowerCase())) throw new HttpError(403, `Host "${host}" is not this gateway (DNS rebinding protection; names and addresses clients use go in allowed_hosts)`);
    const origin = req.headers.origin;
    if (origin === undefined) return;
    if (!this.localOrigins.has(origin.toLowerCase()) && !this.config.allowed_origins.includes(origin)) {
      throw new HttpError(403, `Origin "${origin}" is not allowed (DNS rebinding protection)`);
    }
  }

  /** The request's JSON body; with `allowEmpty`, an empty body is undefined (admin POSTs without options). */
  private readBody(req: IncomingMessage, allowEmpty = false): Promise<unknown> {
    return readJsonBody(req, this.config.sessions.max_body, allowEmpty);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.checkHostAndOrigin(req);
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const pathname = q < 0 ? raw : raw.slice(0, q);
    // /mcp/<server> and /<server>/mcp: clients that guess the transport from the URL want the latter.
    const m = /^\/mcp\/([^/]+)\/?$/.exec(pathname) ?? /^\/([^/]+)\/mcp\/?$/.exec(pathname);
    if (m) return this.mcp.handleMcp(req, res, pathName(m[1]));
    let url: URL;
    try { url = new URL(raw, 'http://gateway'); } catch { throw new HttpError(400, 'Bad Request: malformed request target'); }
    if (url.pathname === '/healthz') return this.lifecycle.healthz(res);
    if (url.pathname === '/readyz') return this.lifecycle.readyz(res);
    if (url.pathname === '/ui' || url.pathname.startsWith('/ui/')) return this.dashboard.handle(req, res, url.pathname);
    if (url.pathname === '/api' || url.pathname.startsWith('/api/')) {
      if (!this.config.admin) throw new HttpError(404, 'the admin API is off: set admin.token in the configuration');
      const authenticatedAs = isAdmin(req, this.config) ? 'api' : (await this.dashboard.authorizes(req)) ? 'dashboard' : undefined;
      if (!authenticatedAs) {
        this.clientAuth.authFailed(req, 'admin', 'wrong or missing admin token');
        throw new HttpError(401, 'the admin API needs Authorization: Bearer <admin token>', { 'www-authenticate': 'Bearer realm="toolgate-admin"' });
      }
      const body = req.method === 'GET' || req.method === 'DELETE' ? undefined : await this.readBody(req, true);
      try {
        await handleAdmin(req, res, url, body, {
          config: () => this.config, state: this.opts.state, audit: this.opts.audit, grants: this.grants,
          sessions: (server) => [...this.sessions.values()].filter((l) => l.server === server).length,
          listings: this.listings, applyPolicy: (file, result) => this.policies.applyPolicy(file, result), policyProblem: (file) => this.policyProblem(file),
          policyInForce: (file) => this.policies.inForce(file),
          approvals: this.approvals, authenticatedAs,
        });
        if (!res.writableEnded) {
          this.streams.add(res);
          // An event stream lasts only as long as what opened it: signing out (here or on another
          // instance), the session's expiry or a new admin token ends it, as it ends the next request.
          this.streamAuth.set(res, authenticatedAs === 'api' ? async () => isAdmin(req, this.config) : () => this.dashboard.signedIn(req));
          this.streamCheck ??= setInterval(() => void this.recheckStreams(), STREAM_CHECK_MS).unref();
          res.on('close', () => { this.streams.delete(res); this.streamAuth.delete(res); });
        }
      } catch (err) {
        if (err instanceof AdminError) throw new HttpError(err.status, err.message);
        throw err;
      }
      return;
    }
    if (url.pathname === '/metrics') {
      const token = this.config.metrics?.token;
      if (token !== undefined && !sameSecret(/^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '', token)) {
        this.clientAuth.authFailed(req, '/metrics', 'wrong or missing metrics token');
        throw new HttpError(401, '/metrics needs Authorization: Bearer <metrics.token>', { 'www-authenticate': 'Bearer realm="toolgate-metrics"' });
      }
      res.writeHead(200, { 'content-type': this.metrics.registry.contentType });
      res.end(await this.metrics.registry.metrics());
      return;
    }
    const sse = /^\/sse\/([^/]+)(\/messages)?\/?$/.exec(url.pathname) ?? /^\/([^/]+)\/sse(\/messages)?\/?$/.exec(url.pathname);
    if (sse) return this.mcp.handleSse(req, res, pathName(sse[1]), sse[2] !== undefined, url);
    if (await this.auth.handle(req, res, url)) return;
    throw new HttpError(404, `no such endpoint: ${url.pathname} (servers are at /mcp/<server> or /<server>/mcp, and /sse/<server> or /<server>/sse)`);
  }

}

/**
 * Servers whose settings a reload changed, with the sessions open on them: those keep the upstream
 * (and the pool) they started with until they close, which an operator editing pool.max would
 * otherwise not guess from "configuration reloaded".
 */
export function keptSessions(previous: GatewayConfig, next: GatewayConfig, open: { server: string }[]): { server: string; sessions: number }[] {
  const out: { server: string; sessions: number }[] = [];
  for (const [name, server] of Object.entries(next.servers)) {
    const before = serverNamed(previous, name);
    if (!before || JSON.stringify(before) === JSON.stringify(server)) continue;
    const sessions = open.filter((l) => l.server === name).length;
    if (sessions > 0) out.push({ server: name, sessions });
  }
  return out;
}
