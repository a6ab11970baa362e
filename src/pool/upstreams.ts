/**
 * The gateway's pools of upstream sessions (issue 26): per server and grant (`pool.share: grant`)
 * or per server (`share: server`), each up to `pool.max` upstream sessions that requests lease,
 * up to `pool.concurrency` at once each (src/pool/view.ts). Policy stays per grant: each client (a modern grant's internal
 * session, or a pooled legacy session) keeps its own policy session, whose upstream is a PoolView.
 */
import type { Logger } from 'pino';
import { durationToMs, poolConcurrency, type ServerConfig } from '../config/gateway.js';
import type { Json } from '../proxy/messages.js';
import { Refused, type Upstream } from '../proxy/upstream.js';
import type { Grant } from '../state/types.js';
import { toolgateVersion } from '../era/versions.js';
import { PooledUpstream } from './member.js';
import { Pool, type Lease } from './pool.js';
import { PoolView, type PoolHost } from './view.js';

/** Toolgate's own server error (-32000..-32099): no upstream session was free in time; nothing was forwarded, so retrying is safe. */
export const POOL_EXHAUSTED = -32051;
const RETRY_AFTER_SECONDS = 1;

/** What a pooled session is initialized with before any client said who it is (replaced by the first client's initialize). */
const DEFAULT_INITIALIZE: Json = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'toolgate-pool', version: '1' } };
const MAX_TASKS = 10_000;

/** `view`: the client session whose messages about the task go to (one of its grant's; another when it closes). */
interface PoolTask { taskId: string; member: PooledUpstream; view: PoolView }
const taskKey = (scope: string, taskId: string) => JSON.stringify([scope, taskId]);

export interface PoolsOptions {
  log: Logger;
  /** Starts one upstream session of this server (a child process or a connection). */
  start(name: string, server: ServerConfig, id: string): Upstream;
  /** A request was refused for want of a free upstream session. */
  onExhausted?(server: string): void;
  /** A pooled session's message had no caller it belongs to: dropped (a server request: refused). */
  onDropped?(server: string, kind: 'answer' | 'progress' | 'notification' | 'request'): void;
}

/** Sessions open or starting, those leased, requests in flight on them, and requests waiting. */
export interface PoolStats { server: string; size: number; busy: number; requests: number; queued: number }

class KeyPool implements PoolHost {
  readonly pool: Pool<PooledUpstream>;
  readonly views = new Set<PoolView>();
  private initParams?: Json;
  private initResult?: Json;
  /**
   * Tasks by who may ask about them (the grant of the view that created it) and by the session
   * that runs them. A task id is the server's and unique only within one upstream session: two
   * sessions of a pool may both number a task "task-1", so neither map is keyed by the id alone.
   */
  private readonly byGrant = new Map<string, PoolTask>();
  private readonly byMember = new Map<string, PoolTask>();
  private readonly closing = new Set<Promise<void>>();
  private started = 0;
  readonly retireCancelled: boolean;
  readonly cancelGraceMs: number;
  /** share: server: the pool serves every grant. */
  private readonly shared: boolean;
  readonly placesTasksOnly: boolean;
  /** Requests one session carries at once: above 1 the sessions are routed (src/pool/member.ts). */
  private readonly concurrency: number;

  constructor(readonly server: string, config: ServerConfig, private readonly opts: PoolsOptions, private readonly forget: () => void) {
    const p = config.pool;
    this.shared = p.share === 'server';
    this.retireCancelled = this.shared;
    this.cancelGraceMs = durationToMs(p.queue_timeout);
    // Each session its own process: a task lives on the one that created it, and another grant's
    // task may carry its id on another (a server numbering its tasks per process). Over HTTP the
    // sessions reach one server, which may know a task made through another instance of a fleet.
    this.placesTasksOnly = this.shared && 'command' in config;
    this.concurrency = poolConcurrency(p);
    const n = this.concurrency;
    // share: server: no grant may hold the whole pool (a grant's requests that never end would
    // starve every other grant): it leases at most max_per_grant sessions' worth of requests.
    const perGrant = p.share === 'server' ? (p.max_per_grant ?? Math.ceil(p.max / 2)) : undefined;
    // pool.max 1 (a small pool to try it out) read "all 1 stayed busy".
    const all = (p.max === 1 ? 'its only upstream session' : `all ${p.max}`) + (n > 1 ? ` (${n} requests each, pool.concurrency)` : '');
    const held = n > 1 ? `${perGrant! * n} requests on them (pool.max_per_grant ${perGrant} × pool.concurrency ${n})` : `${perGrant} of them (pool.max_per_grant)`;
    const text = (why: 'queue_full' | 'queue_timeout', capped: boolean) => capped
      ? `The pool of upstream sessions of "${server}" is shared by all grants, and this grant already leases ${held}${why === 'queue_full' ? ` while ${p.queue_max} requests wait` : ` for pool.queue_timeout (${p.queue_timeout})`}. This request was not forwarded; retry in a moment.`
      : why === 'queue_full'
        ? `The pool of upstream sessions of "${server}" is exhausted: ${all} ${p.max === 1 ? 'is' : 'are'} busy and ${p.queue_max} requests already wait. This request was not forwarded; retry in a moment.`
        : `The pool of upstream sessions of "${server}" is exhausted: ${all} stayed busy for pool.queue_timeout (${p.queue_timeout}). This request was not forwarded; retry in a moment.`;
    this.pool = new Pool<PooledUpstream>({
      size: p.size, max: p.max, idleMs: durationToMs(p.idle_timeout), queueTimeoutMs: durationToMs(p.queue_timeout), queueMax: p.queue_max,
      maxPerOwner: perGrant === undefined ? undefined : perGrant * n, concurrency: n,
      create: () => this.create(config),
      destroy: (member, why) => {
        opts.log.info({ server }, `pooled upstream session closed: ${why}`);
        for (const t of [...this.byMember.values()]) if (t.member === member) this.forgetTask(t);
        const done = member.close().catch(() => undefined).then(() => { this.closing.delete(done); });
        this.closing.add(done);
      },
      exhausted: (why, capped) => {
        opts.onExhausted?.(server);
        return new Refused(text(why, capped), POOL_EXHAUSTED, { retryable: true, reason: 'pool_exhausted', retryAfterSeconds: RETRY_AFTER_SECONDS });
      },
      // A strict session (a request cancelled on it may still run) is closed once no task runs on it.
      spent: (member) => member.strict && !this.runsTasks(member),
      gone: () => new Refused(`The upstream session this request needs on "${server}" is gone (the server exited or the pool was closed).`, -32603),
    });
  }

  private async create(config: ServerConfig): Promise<PooledUpstream> {
    const upstream = this.opts.start(this.server, config, `pool-${++this.started}`);
    const member = await PooledUpstream.start(upstream, this.initParams ?? DEFAULT_INITIALIZE, {
      log: this.opts.log,
      server: this.server,
      routed: this.concurrency > 1,
      dropped: (kind) => this.opts.onDropped?.(this.server, kind),
      broadcast: (m) => { for (const v of this.views) v.listChanged(m); },
      taskOwner: (m, taskId) => this.byMember.get(taskKey(m.key, taskId))?.view,
      died: (m, reason) => {
        this.opts.log.warn({ server: this.server }, `pooled upstream session gone: ${reason}`);
        this.pool.remove(m, `the upstream is gone: ${reason}`);
      },
    });
    this.initResult ??= member.initialized;
    return member;
  }

  acquire(want: PooledUpstream | undefined, signal: AbortSignal | undefined, owner: string): Promise<Lease<PooledUpstream>> {
    return this.pool.acquire(want, signal, owner);
  }

  async initialize(params: Json): Promise<Json> {
    // share: server — a session serves every grant's clients, so it is initialized as toolgate, not
    // as the first client (whose name a server might log, or echo to other grants in its instructions).
    this.initParams ??= this.shared ? { ...params, clientInfo: { name: 'toolgate', version: toolgateVersion() } } : params;
    if (this.initResult) return this.initResult;
    const lease = await this.pool.acquire(undefined, undefined, undefined, true);
    lease.release();
    return lease.resource.initialized!;
  }

  taskCreated(taskId: string, member: PooledUpstream, view: PoolView): void {
    // A server that reuses an id on one session, or one grant's two tasks of the same id: the newest wins.
    for (const old of [this.byMember.get(taskKey(member.key, taskId)), this.byGrant.get(taskKey(view.scope, taskId))]) if (old) this.forgetTask(old);
    if (this.byGrant.size >= MAX_TASKS) this.forgetTask(this.byGrant.values().next().value!);
    const task: PoolTask = { taskId, member, view };
    this.byGrant.set(taskKey(view.scope, taskId), task);
    this.byMember.set(taskKey(member.key, taskId), task);
  }

  taskMember(taskId: string, view: PoolView): PooledUpstream | undefined {
    return this.byGrant.get(taskKey(view.scope, taskId))?.member;
  }

  taskEnded(taskId: string, view: PoolView): void {
    const task = this.byGrant.get(taskKey(view.scope, taskId));
    if (task) this.forgetTask(task);
  }

  private forgetTask(task: PoolTask): void {
    if (this.byGrant.get(taskKey(task.view.scope, task.taskId)) === task) this.byGrant.delete(taskKey(task.view.scope, task.taskId));
    if (this.byMember.get(taskKey(task.member.key, task.taskId)) === task) this.byMember.delete(taskKey(task.member.key, task.taskId));
    if (task.member.strict && !task.member.dead && !this.runsTasks(task.member)) this.pool.retire(task.member, 'spent: its last task ended');
  }

  private runsTasks(member: PooledUpstream): boolean {
    for (const t of this.byMember.values()) if (t.member === member) return true;
    return false;
  }

  async detach(view: PoolView): Promise<void> {
    this.views.delete(view);
    // A task outlives the client session that created it: another open session of its grant takes
    // over its messages (and keeps it placed); with none left it is forgotten (and asked about no more).
    const heir = [...this.views].find((v) => v.scope === view.scope);
    for (const t of [...this.byGrant.values()]) {
      if (t.view !== view) continue;
      if (heir) t.view = heir;
      else this.forgetTask(t);
    }
    if (this.views.size > 0) return;
    // No client uses the pool any more (the server was removed or changed, the gateway stops, or its sessions idled out).
    this.forget();
    this.pool.close('no client session uses the pool');
    await Promise.allSettled([...this.closing]);
  }
}

export class UpstreamPools {
  private readonly pools = new Map<string, KeyPool>();

  constructor(private readonly opts: PoolsOptions) {}

  /**
   * The upstream for a new policy session of this client, or undefined when its requests are not
   * pooled (a legacy client, unless the server pools all clients): it keeps its own.
   */
  view(name: string, server: ServerConfig, grant: Grant, clientEra: 'legacy' | 'modern'): PoolView | undefined {
    const p = server.pool;
    if (clientEra === 'legacy' && p.clients !== 'all') return undefined;
    // The server's configuration is part of the key: a changed server gets a new pool, the old one closes with its last session.
    const key = JSON.stringify([name, p.share === 'grant' ? grant.id : null, server]);
    let pool = this.pools.get(key);
    if (!pool) {
      const made: KeyPool = new KeyPool(name, server, this.opts, () => { if (this.pools.get(key) === made) this.pools.delete(key); });
      this.pools.set(key, (pool = made));
    }
    // Tasks belong to the grant that created them (SPEC 10): a view asks only about its grant's.
    const view = new PoolView(pool, this.opts.log, grant.id);
    pool.views.add(view);
    return view;
  }

  /** Upstream sessions, those leased, and requests waiting, by server (summed over its pools). */
  stats(): PoolStats[] {
    const by = new Map<string, PoolStats>();
    for (const p of this.pools.values()) {
      const s = by.get(p.server) ?? { server: p.server, size: 0, busy: 0, requests: 0, queued: 0 };
      s.size += p.pool.size;
      s.busy += p.pool.busy;
      s.requests += p.pool.leased;
      s.queued += p.pool.queued;
      by.set(p.server, s);
    }
    return [...by.values()];
  }
}

