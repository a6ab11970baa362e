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
import { durationToMs, isLoopback, sizeToBytes, type GatewayConfig, type ServerConfig } from './config.js';
import { AdminError, handleAdmin, isAdmin } from './admin.js';
import { Grants } from './grants.js';
import { HttpError, sendHttpError } from './http-errors.js';
import { Listings } from './listings.js';
import { GatewayMetrics } from './metrics.js';
import { checkPostHeaders, isInitializeRequest, StreamableSession, type ClientChannel } from './streamable.js';

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
}

const ANONYMOUS: Omit<Grant, 'server'> = { id: 'anonymous', label: 'anonymous', tags: [], createdAt: new Date(0).toISOString() };

function listenHost(config: GatewayConfig): string {
  return config.listen.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
}

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
  private readonly failures = new Map<string, { count: number; until: number }>();
  private readonly policies = new Map<string, { mtime: number; policy: CompiledPolicy }>();
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
    this.localOrigins = new Set([...this.allowedHosts].flatMap((h) => [`http://${h}`, `https://${h}`]));
    const idle = durationToMs(this.config.sessions.idle_timeout);
    this.reaper = setInterval(() => this.reap(idle), Math.min(idle, 30_000));
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
    for (const live of this.sessions.values()) if (!config.servers[live.server]) void this.close(live, 'the server was removed from the configuration');
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
    await Promise.all([...this.sessions.values()].map((l) => this.close(l, 'the gateway is stopping')));
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  /** DNS-rebinding protection: the Host must be this listener, an Origin must be a local one or an allowed one. */
  private checkHostAndOrigin(req: IncomingMessage): void {
    const host = req.headers.host ?? '';
    if (!this.allowedHosts.has(host.toLowerCase())) throw new HttpError(403, `Host "${host}" is not this gateway (DNS rebinding protection)`);
    const origin = req.headers.origin;
    if (origin === undefined) return;
    if (!this.localOrigins.has(origin.toLowerCase()) && !this.config.allowed_origins.includes(origin)) {
      throw new HttpError(403, `Origin "${origin}" is not allowed (DNS rebinding protection)`);
    }
  }

  /** The request's JSON body; with `allowEmpty`, an empty body is undefined (admin POSTs without options). */
  private readBody(req: IncomingMessage, allowEmpty = false): Promise<unknown> {
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

  /** Bearer grant, or anonymous on an auth: none server. Failed attempts are audited and slowed. */
  private async authenticate(req: IncomingMessage, name: string, server: ServerConfig): Promise<Grant> {
    if (server.auth === 'none') return { ...ANONYMOUS, server: name };
    const ip = req.socket.remoteAddress ?? 'unknown';
    const blocked = this.failures.get(ip);
    if (blocked && blocked.count >= 20 && blocked.until > Date.now()) throw new HttpError(429, 'too many failed authentication attempts; try again in a minute', { 'retry-after': '60' });
    const header = req.headers.authorization ?? '';
    const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    const result = await this.auth.authenticate(token, name);
    if (result.ok) return result.grant;
    const refusal = this.auth.refusal(req, name, (req.url ?? '/').split('?')[0], result, !!token);
    if (result.status === 503) throw new HttpError(refusal.status, refusal.message, refusal.headers);
    // A request without a token is how every OAuth client starts; only wrong tokens count as guesses.
    if (token) {
      const current = this.failures.get(ip);
      const f = current && current.until > Date.now() ? current : { count: 0, until: Date.now() + 60_000 };
      f.count++;
      this.failures.set(ip, f);
    }
    this.opts.audit.append({ kind: 'auth', server: name, decision: 'deny', message: `${result.reason} (from ${ip})` });
    this.metrics.authFailures.inc({ server: name });
    throw new HttpError(refusal.status, refusal.message, refusal.headers);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.checkHostAndOrigin(req);
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    const pathname = q < 0 ? raw : raw.slice(0, q);
    // /mcp/<server> and /<server>/mcp: clients that guess the transport from the URL want the latter.
    const m = /^\/mcp\/([^/]+)\/?$/.exec(pathname) ?? /^\/([^/]+)\/mcp\/?$/.exec(pathname);
    if (m) return this.handleMcp(req, res, decodeURIComponent(m[1]));
    const url = new URL(raw, 'http://gateway');
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
        this.opts.audit.append({ kind: 'auth', decision: 'deny', message: `admin API: wrong or missing admin token (from ${req.socket.remoteAddress})` });
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
    if (sse) return this.handleSse(req, res, decodeURIComponent(sse[1]), sse[2] !== undefined, url);
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
      const live = this.open(id, name, server, grant, streamable);
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
    if (!live || !(channel instanceof StreamableSession) || live.server !== name) throw new HttpError(404, 'Session not found: start a new session with initialize');
    if (live.grant.id !== grant.id) throw new HttpError(403, 'this session belongs to another grant');
    live.lastActive = Date.now();
    if (req.method === 'POST') channel.post(req, res, await this.readBody(req));
    else if (req.method === 'GET') channel.get(req, res);
    else channel.delete(res);
  }

  private async serverAndGrant(req: IncomingMessage, name: string): Promise<{ server: ServerConfig; grant: Grant }> {
    const server = this.config.servers[name];
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
      const live = this.open(transport.sessionId, name, server, grant, (session) => {
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
    if (!live || !transport || live.server !== name) throw new HttpError(404, 'Session not found: open /sse/<server> first');
    if (live.grant.id !== grant.id) throw new HttpError(403, 'this session belongs to another grant');
    live.lastActive = Date.now();
    const body = await this.readBody(req);
    await transport.handlePostMessage(req, res, body);
  }

  /**
   * The compiled policy for a new session: the grant's, else the server's, else null (the
   * recommended policy). Compiled policies are immutable, so sessions share one per file version.
   */
  private policyFor(server: ServerConfig, grant: Grant): CompiledPolicy | null {
    const file = grant.policy ?? server.policy;
    if (!file) return null;
    let mtime = 0;
    try { mtime = statSync(file).mtimeMs; } catch { /* loadPolicyFile reports it */ }
    const cached = this.policies.get(file);
    if (cached && cached.mtime === mtime) return cached.policy;
    const loaded = loadPolicyFile(file);
    if (!loaded.ok) throw new HttpError(500, `the policy is invalid: ${formatIssue(file, loaded.issues[0])}`);
    const policy = new CompiledPolicy(loaded.policy, loaded.hash);
    this.policies.set(file, { mtime, policy });
    this.watch(file);
    return policy;
  }

  /** Hot reload: a changed policy file reaches every live session using it; an invalid one is refused. */
  private watch(file: string): void {
    if (this.watchers.has(file)) return;
    this.watchers.set(file, watchPolicyFile(file, (result) => {
      if (!result.ok) {
        this.opts.log.error(`policy reload rejected, keeping the previous policy: ${formatIssue(file, result.issues[0])}`);
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

  private open(id: string, name: string, server: ServerConfig, grant: Grant, channelFor: (session: PolicySession) => ClientChannel): Live {
    const { log, state, audit } = this.opts;
    const policy = this.policyFor(server, grant);
    const engine = new Engine({ policy: policy ?? compileObject(PENDING_POLICY), counters: state.counters, flags: state.flags, failOpen: server.fail_open ?? this.config.fail_open });
    const upstream: Upstream = 'command' in server
      ? new StdioUpstream({ command: server.command, args: server.args, env: { ...process.env, ...server.env }, cwd: server.cwd, log, stderr: log.child({ server: name, session: id }) })
      : new HttpUpstream({ url: new URL(server.url), headers: server.headers, log });
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
          this.metrics.calls.inc({ server: name, tool: known ? tool : '(unlisted)', decision });
          this.metrics.decisionSeconds.observe({ server: name }, seconds);
        },
        upstream: (_tool, outcome, seconds) => this.metrics.upstreamSeconds.observe({ server: name, outcome }, seconds),
      },
      toClient: (m, raw) => channel.send(m, raw, session.relatedRequest(m)),
      toServer: (m) => { upstream.send(m).catch((err: Error) => session.deliveryFailed(m, err)); },
    });
    const channel = channelFor(session);
    upstream.onmessage = (m, raw) => session.fromServer(m, raw);
    upstream.onclose = (reason) => {
      session.upstreamClosed(reason);
      // Closing a session ends its upstream: only an upstream that goes on its own is news.
      if (this.sessions.has(id)) log.warn({ server: name, session: id }, `upstream gone: ${reason}`);
    };
    const live: Live = { id, server: name, grant, engine, policyFile: policy ? (grant.policy ?? server.policy) : undefined, channel, upstream, session, lastActive: Date.now() };
    this.sessions.set(id, live);
    this.metrics.sessions.set({ server: name }, [...this.sessions.values()].filter((l) => l.server === name).length);
    log.info({ server: name, session: id, grant: grant.label }, 'session opened');
    return live;
  }

  private async close(live: Live, why: string): Promise<void> {
    if (!this.sessions.delete(live.id)) return;
    this.metrics.sessions.set({ server: live.server }, [...this.sessions.values()].filter((l) => l.server === live.server).length);
    this.opts.log.info({ server: live.server, session: live.id }, `session closed: ${why}`);
    live.session.upstreamClosed(why);
    await Promise.allSettled([live.channel.close(), live.upstream.close()]);
  }

  private reap(idleMs: number): void {
    const now = Date.now();
    for (const [ip, f] of this.failures) if (f.until <= now) this.failures.delete(ip);
    const cutoff = now - idleMs;
    // A call still in flight is activity: a slow tool must not lose its session halfway.
    for (const live of this.sessions.values()) if (live.lastActive < cutoff && live.session.inFlight === 0) void this.close(live, 'idle');
  }
}
