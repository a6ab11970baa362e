/**
 * A pool as one policy session sees it: an Upstream. Each request the session forwards leases a
 * pooled upstream session (src/pool/member.ts; alone, or beside others with pool.concurrency) until its answer (or its cancellation, or the
 * server's exit), under an id and progress token toolgate gives it; the server's requests during
 * the lease come back here under ids of toolgate's, and their answers go to the session that asked.
 * The session's initialize is answered from the pool's (each pooled session was initialized once).
 */
import type { Logger } from 'pino';
import { errorResponse, idKey, INTERNAL_ERROR, isObject, isValidId, type Id, type Json } from '../proxy/messages.js';
import { METHOD_NOT_FOUND } from '../proxy/methods.js';
import { NotDelivered, Refused, type Upstream } from '../proxy/upstream.js';
import { createdTask, isTerminal, relatedTaskId, requestedTaskId, TASK_REQUESTS } from '../tasks/shapes.js';
import type { LeaseHolder, PooledUpstream } from './member.js';
import { poolId } from './member.js';
import type { Lease } from './pool.js';

/** What a view needs of its pool (src/pool/upstreams.ts). */
export interface PoolHost {
  readonly server: string;
  /** `owner`: the grant asking (with share: server one grant leases at most pool.max_per_grant at once). */
  acquire(want: PooledUpstream | undefined, signal: AbortSignal | undefined, owner: string): Promise<Lease<PooledUpstream>>;
  /**
   * Whether a session whose request was cancelled is closed rather than given to the next request
   * (share: server): the server may go on with the request, and what it sends then (a question, a
   * log line) would reach whoever leases the session next, another grant.
   */
  readonly retireCancelled: boolean;
  /**
   * How long a request cancelled on a routed session keeps its place (and its grant's) while the
   * server has not answered it (pool.queue_timeout); then (with retireCancelled) the session is retired.
   */
  readonly cancelGraceMs: number;
  /**
   * A task request goes only to the session known to run the task (share: server over processes):
   * one the pool cannot place is refused, never sent to a session chosen by its id alone.
   */
  readonly placesTasksOnly: boolean;
  /** The pooled sessions' initialize answer (starting one the first time, initialized with these params). */
  initialize(params: Json): Promise<Json>;
  /**
   * Tasks run where they were created: their requests lease that session, their messages go to its
   * creator. A task is known by the asking view's grant and its id (ids are unique per upstream session only).
   */
  taskCreated(taskId: string, member: PooledUpstream, view: PoolView): void;
  taskMember(taskId: string, view: PoolView): PooledUpstream | undefined;
  taskEnded(taskId: string, view: PoolView): void;
  detach(view: PoolView): Promise<void>;
}

/** Per-client state a pooled (shared) upstream session cannot keep for one client. */
const UNPOOLABLE: Record<string, string> = {
  'resources/subscribe': 'a subscription would outlive the call on a shared upstream session; read the resource again instead',
  'resources/unsubscribe': 'pooled servers take no subscriptions',
  'logging/setLevel': 'the log level of a shared upstream session is not one client\'s to set',
};

const MAX_ASKS = 1000;

interface Leased { lease: Lease<PooledUpstream>; id: Id; method: string; token?: { inner: string; outer: unknown } }

export class PoolView implements Upstream, LeaseHolder {
  onmessage?: (message: unknown, raw?: string) => void;
  onclose?: (reason: string) => void;
  readonly started = Promise.resolve();
  /** Requests leasing a pooled session, by the id toolgate gave them there. */
  private readonly leases = new Map<string, Leased>();
  /** Requests waiting for a pooled session, by their own id: a cancellation takes them out of the queue. */
  private readonly waiting = new Map<string, AbortController>();
  /**
   * The servers' requests this view's client was asked, by the id toolgate gave them; `lease`: the
   * request during which it was asked (its answer is dropped once that lease ended: the server may
   * have given the same id to a request of the next caller). A task's questions outlive the lease.
   */
  private readonly asks = new Map<string, { member: PooledUpstream; id: Id; lease?: string }>();
  private closed = false;

  /** `scope`: the grant whose tasks this view may ask about. */
  constructor(private readonly host: PoolHost, private readonly log: Logger, readonly scope: string) {}

  async send(message: Json): Promise<void> {
    if (this.closed) throw new NotDelivered('the session is closed');
    const method = message.method;
    if (typeof method !== 'string') return this.answerServer(message);
    if (!isValidId(message.id)) return this.notification(method, message);
    return this.request(method, message.id, message);
  }

  private async request(method: string, id: Id, message: Json): Promise<void> {
    if (method === 'initialize') {
      let result: Json;
      try {
        result = await this.host.initialize(isObject(message.params) ? message.params : {});
      } catch (err) {
        // The client hears why; then this session ends, so that its next request starts afresh (a session initializes once).
        setImmediate(() => this.onclose?.('its upstream could not be initialized'));
        if (err instanceof NotDelivered) throw err;
        throw new Refused(`The upstream MCP server "${this.host.server}" could not be started: ${(err as Error).message}`, INTERNAL_ERROR);
      }
      this.onmessage?.({ jsonrpc: '2.0', id, result });
      return;
    }
    if (Object.hasOwn(UNPOOLABLE, method)) {
      throw new Refused(`Method not found: ${method} is not available on "${this.host.server}", whose upstream sessions toolgate pools: ${UNPOOLABLE[method]}.`, METHOD_NOT_FOUND);
    }
    const taskId = TASK_REQUESTS.has(method) || method === 'tasks/result' ? requestedTaskId(message.params) : undefined;
    const want = taskId === undefined ? undefined : this.host.taskMember(taskId, this);
    if (taskId !== undefined && want === undefined && this.host.placesTasksOnly) {
      throw new Refused(`The upstream session that ran task ${JSON.stringify(taskId).slice(0, 80)} is not known here (it ended, or every client session of this grant that knew it closed), and the task with it: toolgate does not ask a pooled session chosen by the task id alone, which another grant's task may carry.`, INTERNAL_ERROR);
    }
    const abort = new AbortController();
    const key = idKey(id);
    this.waiting.set(key, abort);
    let lease: Lease<PooledUpstream>;
    try {
      lease = await this.host.acquire(want, abort.signal, this.scope);
    } catch (err) {
      if (want && !(err instanceof Refused)) throw new Refused(`The upstream session that ran task ${JSON.stringify(taskId).slice(0, 80)} is gone (its server exited or was closed), and the task with it.`, INTERNAL_ERROR);
      if (err instanceof NotDelivered) throw err;
      if (abort.signal.aborted) throw new NotDelivered('cancelled while it waited for an upstream session');
      // No session could be started for it (the command is missing, out of processes): never sent.
      throw new Refused(`The upstream MCP server "${this.host.server}" could not be started: ${(err as Error).message}`, INTERNAL_ERROR);
    } finally {
      if (this.waiting.get(key) === abort) this.waiting.delete(key);
    }
    if (this.closed) {
      lease.release();
      throw new NotDelivered('the session is closed');
    }
    const inner = poolId('r');
    const leased: Leased = { lease, id, method };
    let out: Json = { ...message, id: inner };
    const params = isObject(message.params) ? message.params : undefined;
    if (params && isObject(params._meta) && params._meta.progressToken !== undefined) {
      leased.token = { inner: poolId('p'), outer: params._meta.progressToken };
      out = { ...out, params: { ...params, _meta: { ...params._meta, progressToken: leased.token.inner } } };
    }
    this.leases.set(inner, leased);
    try {
      await lease.resource.send(this, out, leased.token?.inner);
    } catch (err) {
      this.leases.delete(inner);
      lease.resource.ended(inner);
      lease.release();
      throw err;
    }
  }

  private notification(method: string, message: Json): Promise<void> {
    if (method !== 'notifications/cancelled') {
      // initialized: each pooled session was initialized once; a client's roots/list_changed or
      // progress has no one session to go to (docs/gateway.md, "Pooled upstream sessions").
      return Promise.resolve();
    }
    const requestId = isObject(message.params) ? message.params.requestId : undefined;
    if (!isValidId(requestId)) return Promise.resolve();
    const waiting = this.waiting.get(idKey(requestId));
    if (waiting) {
      waiting.abort();
      return Promise.resolve();
    }
    for (const [inner, leased] of this.leases) {
      if (leased.id !== requestId) continue;
      const sent = leased.lease.resource.upstream.send({ ...message, params: { ...message.params as Json, requestId: inner } });
      this.endLease(inner, leased, true);
      return sent;
    }
    return Promise.resolve();
  }

  /** A request still waiting for a pooled session leaves the queue: true when it was (it is never sent). */
  withdraw(id: Id): boolean {
    const waiting = this.waiting.get(idKey(id));
    if (!waiting) return false;
    waiting.abort();
    return true;
  }

  /** The client answered one of the server's requests: to the session that asked, under its own id. */
  private answerServer(message: Json): Promise<void> {
    const ask = typeof message.id === 'string' ? this.asks.get(message.id) : undefined;
    if (!ask) return Promise.resolve();
    this.asks.delete(message.id as string);
    if (ask.member.dead) return Promise.resolve();
    return ask.member.upstream.send({ ...message, id: ask.id });
  }

  /**
   * A lease ends unanswered (cancelled, or the view closes): what the server still sends for it is
   * dropped; with `retireCancelled` the session turns strict: closed (and replaced on demand) instead
   * of handed on, unless it runs tasks (of other grants too), which it serves until they end.
   */
  private endLease(inner: string, leased: Leased, cancelled: boolean): void {
    this.leases.delete(inner);
    this.forgetAsks(inner);
    const member = leased.lease.resource;
    member.ended(inner);
    if (cancelled && member.routed) {
      // A routed session (pool.concurrency) passes on only what names its request, so a cancelled
      // one's late messages reach no one; but the server may go on with it (MCP lets it), so it
      // keeps its place, and its grant's, until the server answers it (dropped) — else a grant
      // could pile work on a shared process beyond its places by sending and cancelling calls.
      // Unanswered after the grace (pool.queue_timeout) its place is free; with share: server the
      // session is retired too (no new request; closed once its other requests end): only the end
      // of its process bounds work the server will not let go of, and that process serves other
      // grants. With share: grant the pool and its processes are the grant's own: handed on, as
      // an exclusive session of such a pool is after a cancellation.
      member.linger(inner, this.host.cancelGraceMs, (how) => {
        if (how === 'grace' && this.host.retireCancelled) {
          member.strict = true;
          this.log.warn({ server: this.host.server }, 'a request cancelled on a shared pooled upstream session stayed unanswered for pool.queue_timeout: the session is retired');
        }
        leased.lease.release();
      });
      return;
    }
    // Released: a strict session that runs no task is closed by the pool instead of handed on.
    if (cancelled && this.host.retireCancelled) member.strict = true;
    leased.lease.release();
  }

  /** The questions asked during a lease that ended: their answers have no request to go to. */
  private forgetAsks(inner: string): void {
    for (const [id, ask] of [...this.asks]) if (ask.lease === inner) this.asks.delete(id);
  }

  answered(member: PooledUpstream, message: Json): void {
    const inner = message.id as string;
    const leased = this.leases.get(inner);
    if (!leased) return;
    this.leases.delete(inner);
    this.forgetAsks(inner);
    const result = message.result;
    const task = leased.method === 'tools/call' ? createdTask(result) : undefined;
    if (task) this.host.taskCreated(task.taskId, member, this);
    else if (leased.method.startsWith('tasks/')) {
      const taskId = isObject(result) && typeof result.taskId === 'string' ? result.taskId : undefined;
      if (taskId !== undefined && (leased.method === 'tasks/result' || (typeof result === 'object' && isTerminal(String((result as Json).status))))) this.host.taskEnded(taskId, this);
    }
    leased.lease.release();
    this.onmessage?.({ ...message, id: leased.id });
  }

  asked(member: PooledUpstream, message: Json): void {
    if (this.asks.size >= MAX_ASKS) this.asks.delete(this.asks.keys().next().value!);
    const inner = poolId('s');
    let lease: string | undefined;
    if (relatedTaskId(message.params) === undefined) {
      for (const [leaseId, leased] of this.leases) if (leased.lease.resource === member && member.holds(leaseId)) lease = leaseId;
    }
    this.asks.set(inner, { member, id: message.id as Id, lease });
    this.onmessage?.({ ...message, id: inner });
  }

  notified(message: Json): void {
    const token = message.method === 'notifications/progress' && isObject(message.params) ? message.params.progressToken : undefined;
    if (token !== undefined) {
      const leased = [...this.leases.values()].find((l) => l.token?.inner === token);
      if (!leased) return;
      this.onmessage?.({ ...message, params: { ...message.params as Json, progressToken: leased.token!.outer } });
      return;
    }
    this.onmessage?.(message);
  }

  /** A list changed on the server: every client of the pool hears it (it is no one call's). */
  listChanged(message: Json): void {
    if (!this.closed) this.onmessage?.(message);
  }

  failed(member: PooledUpstream, reason: string): void {
    for (const [inner, leased] of [...this.leases]) {
      if (leased.lease.resource !== member) continue;
      this.leases.delete(inner);
      leased.lease.drop(`the upstream is gone: ${reason}`);
      this.log.warn({ server: this.host.server, method: leased.method }, `a pooled upstream session ended during a request: ${reason}`);
      // Never sent again on another session: it may have run.
      this.onmessage?.(errorResponse(leased.id, INTERNAL_ERROR, `The upstream MCP server exited during this request (${reason.slice(0, 200)}). toolgate does not send it again, since it may have run; the next request gets a new upstream session.`));
    }
    for (const [inner, ask] of [...this.asks]) if (ask.member === member) this.asks.delete(inner);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const abort of this.waiting.values()) abort.abort();
    for (const [inner, leased] of [...this.leases]) {
      // Its client is gone: the server stops working on it.
      void leased.lease.resource.upstream.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: inner, reason: 'the client session closed' } }).catch(() => undefined);
      this.endLease(inner, leased, true);
    }
    this.asks.clear();
    await this.host.detach(this);
  }
}
