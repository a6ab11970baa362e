import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Approvals, cliHowTo } from '../approvals/index.js';
import type { AuditLog } from '../audit/index.js';
import { McpAuth } from '../auth/index.js';
import { CompiledPolicy, Engine } from '../engine/index.js';
import type { Logger } from '../log.js';
import { formatIssue, loadPolicyFile, watchPolicyFile, type LoadResult } from '../policy/index.js';
import { PinGuard } from '../proxy/pins.js';
import { compileObject, PENDING_POLICY, recommendedPolicyFeed } from '../proxy/recommended.js';
import { PolicySession } from '../proxy/session.js';
import { HttpUpstream } from '../proxy/upstream-http.js';
import { StdioUpstream } from '../proxy/upstream-stdio.js';
import type { Upstream } from '../proxy/upstream.js';
import type { Grant, StateStore } from '../state/types.js';
import { Dashboard } from '../web/index.js';
import { durationToMs, isLoopback, serverNamed, sizeToBytes, type GatewayConfig, type ServerConfig } from './config.js';
import { AdminError, handleAdmin, isAdmin } from './admin.js';
import { AuthFailures, type FailureSummary } from './auth-failures.js';
import { Grants } from './grants.js';
import { HttpError, sendHttpError } from './http-errors.js';
import { Listings } from './listings.js';
import { GatewayMetrics } from './metrics.js';
import { checkContentType, checkPostHeaders, isInitializeRequest, StreamableSession, type ClientChannel } from './streamable.js';

export interface GatewayOptions {
  config: GatewayConfig;
  state: StateStore;
  audit: AuditLog;
  log: Logger;
  /** What the approve command printed for people needs to reach this gateway's state, e.g. `-c toolgate.yaml`. */
  stateFlag?: string;
  /** First delay between webhook retries (default 1 s). */
  webhookBackoffMs?: number;
}

interface Live {
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

const ANONYMOUS: Omit<Grant, 'server'> = { id: 'anonymous', label: 'anonymous', tags: [], createdAt: new Date(0).toISOString() };

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

/** Failed authentication attempts per address and minute past which further failures get 429. */
const AUTH_FAILURE_LIMIT = 20;
/** How long a client whose new session was refused for capacity is asked to wait. */
const CAPACITY_RETRY_SECONDS = '30';

/**
 * `toolgate serve`: one HTTP listener, many upstream servers at /mcp/<server>. Each client
 * session gets its own upstream connection and its own policy session; grants authenticate every
 * request; Host and Origin are checked against DNS rebinding.
 */
export class Gateway {
  readonly metrics = new GatewayMetrics();
  readonly approvals: Approvals;
  private readonly stopApprovalMetrics: () => void;
  private config: GatewayConfig;
  private readonly grants: Grants;
  private readonly auth: McpAuth;
  private readonly sessions = new Map<string, Live>();
  private readonly failures: AuthFailures;
  /** Sessions being closed, so that stopping waits for their upstreams to be gone. */
  private readonly closing = new Set<Promise<void>>();
  /** The last good version of each policy file; `rejected`: the mtime of a version that failed to load. */
  private readonly policies = new Map<string, { mtime: number; policy: CompiledPolicy; rejected?: number }>();
  private readonly watchers = new Map<string, () => void>();
  private readonly http: Server;
  private reaper?: NodeJS.Timeout;
  private port = 0;
  private allowedHosts = new Set<string>();
  private localOrigins = new Set<string>();
  private readonly dashboard: Dashboard;
  private readonly listings = new Listings();
  /** Admin responses still open after their handler returned: event streams, ended when the gateway stops. */
  private readonly streams = new Set<ServerResponse>();

  constructor(private readonly opts: GatewayOptions) {
    this.config = opts.config;
    this.dashboard = new Dashboard({ config: () => this.config, audit: opts.audit });
    this.grants = new Grants(opts.state.grants);
    this.approvals = new Approvals({
      store: opts.state.approvals,
      audit: opts.audit,
      log: opts.log,
      howTo: cliHowTo(opts.stateFlag),
      onHeld: (a, notice) => opts.log.info({ server: a.server, tool: a.tool, approval: a.id }, notice),
      webhook: (server) => this.config.servers[server]?.approvals?.webhook,
      webhookBackoffMs: opts.webhookBackoffMs,
    });
    this.stopApprovalMetrics = this.watchApprovalMetrics();
    this.auth = new McpAuth({ config: () => this.config, grants: this.grants, store: opts.state.oauth, audit: opts.audit, log: opts.log });
    this.failures = new AuthFailures({ limit: AUTH_FAILURE_LIMIT, windowMs: 60_000, report: (f) => this.auditFailures(f) });
    this.http = createServer((req, res) => {
      this.handle(req, res).catch((err: Error) => {
        if (err instanceof HttpError) return sendHttpError(res, err);
        opts.log.error({ err: err.message }, 'request failed');
        sendHttpError(res, new HttpError(500, 'internal error'));
      });
    });
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
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => resolve());
    });
    this.port = (this.http.address() as AddressInfo).port;
    this.allowedHosts = new Set([`localhost:${this.port}`, `127.0.0.1:${this.port}`, `[::1]:${this.port}`, `${host}:${this.port}`]);
    // A name without a port is the name clients use for this listener (or, behind a proxy, without one).
    for (const h of this.config.allowed_hosts.map((x) => x.toLowerCase())) {
      this.allowedHosts.add(h);
      if (!/:\d+$/.test(h)) this.allowedHosts.add(`${h}:${this.port}`);
    }
    this.localOrigins = new Set([...this.allowedHosts].flatMap((h) => [`http://${h}`, `https://${h}`]));
    const { idle_timeout: idle, idle_timeout_unused: unused } = this.config.sessions;
    this.reaper = setInterval(() => this.reap(), Math.min(durationToMs(idle), durationToMs(unused), 30_000));
    this.reaper.unref();
    return this.address;
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

  /**
   * Applies a new configuration: added servers appear, removed ones end their sessions. The
   * listener stays where it is; a configuration it would refuse at start is refused here too.
   */
  setConfig(config: GatewayConfig): void {
    config = { ...config, listen: this.config.listen };
    this.checkOpenServers(config);
    this.config = config;
    for (const live of this.sessions.values()) if (!serverNamed(config, live.server)) void this.close(live, 'the server was removed from the configuration');
  }

  /** Pending count read at each scrape; outcomes and time to decision counted as they happen, in any process. */
  private watchApprovalMetrics(): () => void {
    const store = this.opts.state.approvals;
    this.metrics.pendingCount = async () => (await store.list({ status: 'pending', limit: 100_000 })).length;
    return store.watch((a) => {
      if (a.status === 'pending') return;
      this.metrics.approvalDecisions.inc({ outcome: a.status });
      if (a.decidedAt !== undefined && (a.status === 'approved' || a.status === 'denied' || a.status === 'timeout')) {
        this.metrics.approvalSeconds.observe({ outcome: a.status }, (a.decidedAt - a.requestedAt) / 1000);
      }
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.reaper);
    for (const res of this.streams) res.end();
    this.stopApprovalMetrics();
    this.approvals.close();
    for (const stop of this.watchers.values()) stop();
    for (const l of [...this.sessions.values()]) void this.close(l, 'the gateway is stopping');
    // Sessions that closed just before the stop too: their children must be gone when this returns.
    await Promise.allSettled([...this.closing]);
    this.failures.flush();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
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
    if (!allowEmpty || req.headers['content-type'] !== undefined) checkContentType(req);
    const max = sizeToBytes(this.config.sessions.max_body);
    const tooLarge = () => new HttpError(413, `the body is larger than ${this.config.sessions.max_body}`);
    if (Number(req.headers['content-length'] ?? 0) > max) return Promise.reject(tooLarge());
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > max) {
          req.removeAllListeners('data');
          reject(tooLarge());
          return;
        }
        chunks.push(chunk);
      });
      req.on('error', reject);
      req.on('end', () => {
        if (size > max) return;
        if (allowEmpty && size === 0) return resolve(undefined);
        try {
          resolve(JSON.parse((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8')));
        } catch {
          reject(new HttpError(400, 'Parse error: the body is not valid JSON', {}, -32700));
        }
      });
    });
  }

  /** Bearer grant, or anonymous on an auth: none server. Failed attempts are counted and slowed; valid tokens never are. */
  private async authenticate(req: IncomingMessage, name: string, server: ServerConfig): Promise<Grant> {
    if (server.auth === 'none') return { ...ANONYMOUS, server: name };
    const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const result = await this.auth.authenticate(token, name);
    if (result.ok) return result.grant;
    const refusal = this.auth.refusal(req, name, (req.url ?? '/').split('?')[0], result, !!token);
    if (result.status === 503) throw new HttpError(refusal.status, refusal.message, refusal.headers);
    this.metrics.authFailures.inc({ server: name });
    // A request without a token is how every OAuth client starts; only wrong tokens count as guesses.
    if (token) this.authFailed(req, name, result.reason);
    throw new HttpError(refusal.status, refusal.message, refusal.headers);
  }

  /** Counts a failed attempt; past the limit, the answer is 429 instead of the reason. */
  private authFailed(req: IncomingMessage, target: string, reason: string): void {
    if (this.failures.failed(req.socket.remoteAddress ?? 'unknown', target, reason)) {
      throw new HttpError(429, 'too many failed authentication attempts from this address; try again in a minute', { 'retry-after': '60' });
    }
  }

  /** One audit row per address, target and minute of failed attempts. */
  private auditFailures(f: FailureSummary): void {
    const what = f.target === 'admin' ? 'admin API' : `server ${f.target}`;
    const message = f.count === 1
      ? `${what}: ${f.reason} (from ${f.address})`
      : `${what}: ${f.count} failed attempts from ${f.address} in the minute from ${new Date(f.since).toISOString()}; the last: ${f.reason}`;
    this.opts.audit.append({ kind: 'auth', server: f.target === 'admin' ? undefined : f.target, decision: 'deny', message });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.checkHostAndOrigin(req);
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const pathname = q < 0 ? raw : raw.slice(0, q);
    // /mcp/<server> and /<server>/mcp: clients that guess the transport from the URL want the latter.
    const m = /^\/mcp\/([^/]+)\/?$/.exec(pathname) ?? /^\/([^/]+)\/mcp\/?$/.exec(pathname);
    if (m) return this.handleMcp(req, res, pathName(m[1]));
    let url: URL;
    try { url = new URL(raw, 'http://gateway'); } catch { throw new HttpError(400, 'Bad Request: malformed request target'); }
    if (url.pathname === '/healthz') {
      // 200 while the store is down too: unlimited calls still pass, and every instance shares the store.
      const state = this.opts.state.health?.() ?? { kind: this.opts.state.kind, status: 'ok' };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: state.status === 'ok' ? 'ok' : 'degraded', servers: Object.keys(this.config.servers).length, sessions: this.sessions.size, state }));
      return;
    }
    if (url.pathname === '/ui' || url.pathname.startsWith('/ui/')) return this.dashboard.handle(req, res, url.pathname);
    if (url.pathname === '/api' || url.pathname.startsWith('/api/')) {
      if (!this.config.admin) throw new HttpError(404, 'the admin API is off: set admin.token in the configuration');
      if (!isAdmin(req, this.config) && !this.dashboard.authorizes(req)) {
        this.authFailed(req, 'admin', 'wrong or missing admin token');
        throw new HttpError(401, 'the admin API needs Authorization: Bearer <admin token>', { 'www-authenticate': 'Bearer realm="toolgate-admin"' });
      }
      const body = req.method === 'GET' || req.method === 'DELETE' ? undefined : await this.readBody(req, true);
      try {
        await handleAdmin(req, res, url, body, {
          config: () => this.config, state: this.opts.state, audit: this.opts.audit, grants: this.grants,
          sessions: (server) => [...this.sessions.values()].filter((l) => l.server === server).length,
          listings: this.listings, applyPolicy: (file, result) => this.applyPolicy(file, result),
          approvals: this.approvals,
        });
        if (!res.writableEnded) {
          this.streams.add(res);
          res.on('close', () => this.streams.delete(res));
        }
      } catch (err) {
        if (err instanceof AdminError) throw new HttpError(err.status, err.message);
        throw err;
      }
      return;
    }
    if (url.pathname === '/metrics') {
      res.writeHead(200, { 'content-type': this.metrics.registry.contentType });
      res.end(await this.metrics.registry.metrics());
      return;
    }
    const sse = /^\/sse\/([^/]+)(\/messages)?\/?$/.exec(url.pathname) ?? /^\/([^/]+)\/sse(\/messages)?\/?$/.exec(url.pathname);
    if (sse) return this.handleSse(req, res, pathName(sse[1]), sse[2] !== undefined, url);
    if (await this.auth.handle(req, res, url)) return;
    throw new HttpError(404, `no such endpoint: ${url.pathname} (servers are at /mcp/<server> or /<server>/mcp, and /sse/<server> or /<server>/sse)`);
  }

  /** Streamable HTTP: POST sends, GET opens the session's stream, DELETE ends the session. */
  private async handleMcp(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    const { server, grant } = await this.serverAndGrant(req, name);
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'POST') checkPostHeaders(req);
    else if (req.method !== 'GET' && req.method !== 'DELETE') throw new HttpError(405, 'Method not allowed', { allow: 'GET, POST, DELETE' });
    if (typeof sid !== 'string') {
      if (req.method !== 'POST') throw new HttpError(400, 'Bad Request: Mcp-Session-Id header is required');
      const body = await this.readBody(req);
      const init = Array.isArray(body) ? body.find(isInitializeRequest) : isInitializeRequest(body) ? body : undefined;
      if (!init) throw new HttpError(400, 'Bad Request: Mcp-Session-Id header is required: start a session with initialize');
      const id = randomUUID();
      const streamable = (session: PolicySession) => new StreamableSession({
        sessionId: id,
        retryMs: 1000,
        maxEvents: 200,
        onMessage: (m) => session.fromClient(m),
        onClientGone: (requestId) => session.clientGone(requestId),
        onEnded: () => { const l = this.sessions.get(id); if (l) void this.close(l, 'the client ended the session'); },
      });
      const live = await this.open(id, name, server, grant, streamable);
      try {
        (live.channel as StreamableSession).post(req, res, body);
      } catch (err) {
        void this.close(live, 'its initialize request was refused');
        throw err;
      }
      return;
    }
    const live = this.sessions.get(sid);
    const channel = live?.channel;
    if (!live || live.starting || !(channel instanceof StreamableSession) || live.server !== name) throw new HttpError(404, 'Session not found: start a new session with initialize');
    if (live.grant.id !== grant.id) throw new HttpError(403, 'this session belongs to another grant');
    live.lastActive = Date.now();
    if (req.method === 'POST') channel.post(req, res, await this.readBody(req));
    else if (req.method === 'GET') channel.get(req, res);
    else channel.delete(res);
  }

  private async serverAndGrant(req: IncomingMessage, name: string): Promise<{ server: ServerConfig; grant: Grant }> {
    const server = serverNamed(this.config, name);
    if (!server) throw new HttpError(404, `no server named "${name}"`);
    return { server, grant: await this.authenticate(req, name, server) };
  }

  /** The legacy HTTP+SSE transport: GET opens the event stream, POST …/messages?sessionId= sends. */
  private async handleSse(req: IncomingMessage, res: ServerResponse, name: string, messages: boolean, url: URL): Promise<void> {
    const { server, grant } = await this.serverAndGrant(req, name);
    if (!messages) {
      if (req.method !== 'GET') throw new HttpError(405, 'open the SSE stream with GET');
      // The message endpoint sits under the stream's own path, whichever form the client used.
      const transport = new SSEServerTransport(`${url.pathname.replace(/\/$/, '')}/messages`, res);
      const live = await this.open(transport.sessionId, name, server, grant, (session) => {
        transport.onmessage = (m) => session.fromClient(m);
        return {
          send: (m) => { transport.send(m as JSONRPCMessage).catch((err: Error) => this.opts.log.debug({ err: err.message }, 'a message for a closed stream was dropped')); },
          close: () => transport.close(),
        };
      });
      live.sse = transport;
      res.on('close', () => void this.close(live, 'the SSE stream closed'));
      await transport.start();
      return;
    }
    if (req.method !== 'POST') throw new HttpError(405, 'send messages with POST');
    const live = this.sessions.get(url.searchParams.get('sessionId') ?? '');
    const transport = live?.sse;
    if (!live || live.starting || !transport || live.server !== name) throw new HttpError(404, 'Session not found: open /sse/<server> first');
    if (live.grant.id !== grant.id) throw new HttpError(403, 'this session belongs to another grant');
    live.lastActive = Date.now();
    const body = await this.readBody(req);
    await transport.handlePostMessage(req, res, body);
  }

  /**
   * The compiled policy for a new session: the grant's, else the server's, else null (the
   * recommended policy). Compiled policies are immutable, so sessions share one per file version.
   * A version that does not load leaves the last good one in use (logged and counted once).
   */
  private policyFor(server: ServerConfig, grant: Grant): CompiledPolicy | null {
    const file = grant.policy ?? server.policy;
    if (!file) return null;
    let mtime = 0;
    try { mtime = statSync(file).mtimeMs; } catch { /* loadPolicyFile reports it */ }
    const cached = this.policies.get(file);
    if (cached && (cached.mtime === mtime || cached.rejected === mtime)) return cached.policy;
    const loaded = loadPolicyFile(file);
    if (!loaded.ok) {
      const problem = formatIssue(file, loaded.issues[0]);
      if (!cached) throw new HttpError(503, `the policy is invalid and no earlier version of it was loaded: ${problem}`);
      cached.rejected = mtime;
      this.policyRejected(file, problem);
      return cached.policy;
    }
    const policy = new CompiledPolicy(loaded.policy, loaded.hash);
    this.policies.set(file, { mtime, policy });
    this.watch(file);
    return policy;
  }

  private policyRejected(file: string, problem: string): void {
    this.metrics.policyRejected.inc({ policy: file });
    this.opts.log.error({ policy: file }, `policy reload rejected, keeping the previous policy: ${problem}`);
  }

  /** Hot reload: a changed policy file reaches every live session using it; an invalid one is refused. */
  private watch(file: string): void {
    if (this.watchers.has(file)) return;
    this.watchers.set(file, watchPolicyFile(file, (result) => {
      let mtime = 0;
      try { mtime = statSync(file).mtimeMs; } catch { /* gone again */ }
      const cached = this.policies.get(file);
      if (!result.ok) {
        // A new session may have met this version first; it is counted once.
        if (cached && cached.rejected !== mtime) {
          cached.rejected = mtime;
          this.policyRejected(file, formatIssue(file, result.issues[0]));
        }
        return;
      }
      this.applyPolicy(file, result);
    }));
  }

  /** A valid policy file's new content reaches every live session using it (once per content: the watcher may see a save the dashboard applied). */
  private applyPolicy(file: string, result: Extract<LoadResult, { ok: true }>): void {
    let mtime = 0;
    try { mtime = statSync(file).mtimeMs; } catch { /* gone again */ }
    const current = this.policies.get(file);
    if (current?.policy.hash === result.hash) {
      current.mtime = mtime;
      return;
    }
    const policy = new CompiledPolicy(result.policy, result.hash);
    this.policies.set(file, { mtime, policy });
    for (const live of this.sessions.values()) if (live.policyFile === file) live.engine.setPolicy(policy);
    this.opts.audit.append({ kind: 'policy_reload', policyHash: result.hash, message: file });
    this.opts.log.info({ policy: file, policyHash: result.hash }, 'policy reloaded');
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
      if (which(l) && !l.starting && l.session.inFlight === 0 && (!lru || l.lastActive < lru.lastActive)) lru = l;
    }
    if (lru) void this.close(lru, `the least recently used idle session: ${why}`);
    return lru !== undefined;
  }

  private async open(id: string, name: string, server: ServerConfig, grant: Grant, channelFor: (session: PolicySession) => ClientChannel): Promise<Live> {
    const { log, state, audit } = this.opts;
    this.admit(name, grant);
    const policy = this.policyFor(server, grant);
    const engine = new Engine({ policy: policy ?? compileObject(PENDING_POLICY), counters: state.counters, flags: state.flags, failOpen: server.fail_open ?? this.config.fail_open });
    let upstream: Upstream;
    try {
      upstream = 'command' in server
        ? new StdioUpstream({ command: server.command, args: server.args, env: { ...process.env, ...server.env }, cwd: server.cwd, log, stderr: log.child({ server: name, session: id }) })
        : new HttpUpstream({ url: new URL(server.url), headers: server.headers, log });
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
      identity: { sessionId: id, serverName: name, grant: { label: grant.label, tags: grant.tags } },
      log,
      pins: new PinGuard(state.pins, name, log),
      callTimeoutMs: durationToMs(server.call_timeout),
      approvals: this.approvals,
      onToolsListed: policy ? undefined : recommendedPolicyFeed(engine, name, () => session, log),
      observe: {
        decision: (tool, decision, rule, seconds) => {
          const known = rule !== '(default)' && !rule.startsWith('/hide/');
          this.metrics.calls.inc(name, known ? tool : '(unlisted)', decision);
          decisionSeconds.observe(seconds);
        },
        upstream: (_tool, outcome, seconds) => {
          let series = upstreamSeconds.get(outcome);
          if (!series) upstreamSeconds.set(outcome, (series = this.metrics.upstreamSeconds.child(name, outcome)));
          series.observe(seconds);
        },
      },
      toClient: (m, raw) => {
        // An answer is activity too: a slow start or a slow call must not make the session look idle.
        if (!Object.hasOwn(m, 'method')) live.lastActive = Date.now();
        channel.send(m, raw, session.relatedRequest(m));
      },
      toServer: (m) => { upstream.send(m).catch((err: Error) => session.deliveryFailed(m, err)); },
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

  private close(live: Live, why: string): Promise<void> {
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
  private reap(): void {
    const now = Date.now();
    const idle = now - durationToMs(this.config.sessions.idle_timeout);
    const unused = now - durationToMs(this.config.sessions.idle_timeout_unused);
    for (const live of this.sessions.values()) {
      if (live.starting || live.session.inFlight > 0) continue;
      const streaming = live.channel instanceof StreamableSession ? live.channel.streaming : true;
      if (live.lastActive < idle) void this.close(live, 'idle');
      else if (!streaming && live.lastActive < unused) void this.close(live, 'unused: no GET stream and no request for sessions.idle_timeout_unused');
    }
  }
}
