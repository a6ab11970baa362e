/**
 * One pooled upstream session: a server process (or connection) initialized once, then serving
 * one lease at a time, or several when `routed` (pool.concurrency above 1). What the server sends
 * is routed to the lease it belongs to, never to another: the answer by the id toolgate gave the
 * leased request, progress by the token toolgate gave it, task messages by task. Requests and other
 * notifications, which name no request, go to the one request leasing it now — unless it is
 * routed (or strict): then nothing tells whose they are, so they are dropped and counted, and a
 * server request is refused. What comes between leases has no caller (see docs/gateway.md,
 * "Pooled upstream sessions").
 */
import type { Logger } from 'pino';
import { errorResponse, isObject, isValidId, type Id, type Json } from '../proxy/messages.js';
import { METHOD_NOT_FOUND } from '../proxy/methods.js';
import type { Upstream } from '../proxy/upstream.js';
import { relatedTaskId, taskView, TASK_NOTIFICATIONS } from '../tasks/shapes.js';

/** Who a pooled session's messages go to: a PoolView (src/pool/view.ts). */
export interface LeaseHolder {
  /** The answer to the leased request (its id still the member's). */
  answered(member: PooledUpstream, message: Json): void;
  /** A request of the server during the lease (sampling, elicitation, roots). */
  asked(member: PooledUpstream, message: Json): void;
  /** A notification for the leased request (progress, log lines). */
  notified(message: Json): void;
  /** The server is gone with the request unanswered. */
  failed(member: PooledUpstream, reason: string): void;
}

export interface MemberOptions {
  log: Logger;
  server: string;
  /** Carries several requests at once: only what names its request reaches anyone. */
  routed?: boolean;
  /** A message was dropped (or a server request refused) for want of a caller it belongs to. */
  dropped?(kind: 'answer' | 'progress' | 'notification' | 'request'): void;
  /** Notifications no single request owns but every client of the pool may hear (list changes). */
  broadcast(message: Json): void;
  /** The holder of the messages of a task this session runs (the view whose request created it), if known. */
  taskOwner(member: PooledUpstream, taskId: string): LeaseHolder | undefined;
  /** The upstream exited or its connection failed: the pool drops this member. */
  died(member: PooledUpstream, reason: string): void;
}

let seq = 0;
/** Ids and progress tokens unique in this process, so that a late answer of an ended lease matches nothing. */
export function poolId(kind: 'r' | 'p' | 's' | 'i' | 'm'): string {
  return `tg-pool-${kind}${++seq}`;
}

const INITIALIZE_TIMEOUT_MS = 30_000;

export class PooledUpstream {
  /** The requests leasing this session now, by their member id, with their progress tokens. */
  private readonly holders = new Map<string, { view: LeaseHolder; token?: string }>();
  /**
   * Cancelled requests of a routed session the server has not answered yet, by member id: each
   * keeps its place (its lease) until the server answers it (the answer is dropped), the grace
   * runs out, or the session ends (src/pool/view.ts endLease).
   */
  private readonly lingering = new Map<string, { timer: NodeJS.Timeout; done: (how: 'answered' | 'grace' | 'gone') => void }>();
  /** The initialize answer this session gave (what pooled sessions' clients are answered with). */
  initialized?: Json;
  dead = false;
  /**
   * A request cancelled on it may still run (share: server), so what it sends is no longer given to
   * whoever leases it: only answers by id, progress by token and task messages by task reach anyone.
   * Such a session serves the tasks it runs until they end, then is closed (src/pool/upstreams.ts).
   */
  strict = false;
  /** This session among the pool's (the tasks it runs are known under it). */
  readonly key = poolId('m');

  private constructor(readonly upstream: Upstream, private readonly opts: MemberOptions) {}

  /** Carries several requests at once (pool.concurrency above 1). */
  get routed(): boolean { return this.opts.routed === true; }

  /** Starts and initializes one upstream session (once: later leases reuse it). */
  static async start(upstream: Upstream, initialize: Json, opts: MemberOptions): Promise<PooledUpstream> {
    const member = new PooledUpstream(upstream, opts);
    try {
      await upstream.started;
      const id = poolId('i');
      let timer: NodeJS.Timeout | undefined;
      const answer = new Promise<Json>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error('the server did not answer initialize')), INITIALIZE_TIMEOUT_MS);
        upstream.onclose = (reason) => reject(new Error(reason));
        upstream.onmessage = (m) => {
          if (!isObject(m) || m.id !== id || Object.hasOwn(m, 'method')) return;
          if (isObject(m.result)) resolve(m.result);
          else reject(new Error(isObject(m.error) && typeof m.error.message === 'string' ? m.error.message.slice(0, 200) : 'initialize failed'));
        };
      });
      answer.catch(() => undefined).finally(() => clearTimeout(timer));
      await upstream.send({ jsonrpc: '2.0', id, method: 'initialize', params: initialize });
      member.initialized = await answer;
      await upstream.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    } catch (err) {
      void upstream.close();
      throw err;
    }
    upstream.onmessage = (m) => member.fromServer(m);
    upstream.onclose = (reason) => member.closed(reason);
    return member;
  }

  /** Sends a leased request (already given its member id and token). */
  send(view: LeaseHolder, message: Json, token?: string): Promise<void> {
    this.holders.set(message.id as string, { view, token });
    return this.upstream.send(message);
  }

  /** The lease of this request (by member id) ended (answered, cancelled): what comes for it from now on is dropped. */
  ended(id: string): void {
    this.holders.delete(id);
  }

  /**
   * A cancelled request (by member id, its lease already ended) that the server may still be
   * working on: `done` once the server answers it ('answered': the answer is dropped all the same),
   * after `graceMs` without an answer ('grace'), or when the session ends ('gone'); once only.
   */
  linger(id: string, graceMs: number, done: (how: 'answered' | 'grace' | 'gone') => void): void {
    if (this.dead) return done('gone');
    const timer = setTimeout(() => this.settle(id, 'grace'), graceMs);
    timer.unref();
    this.lingering.set(id, { timer, done });
  }

  private settle(id: string, how: 'answered' | 'grace' | 'gone'): void {
    const l = this.lingering.get(id);
    if (!l) return;
    this.lingering.delete(id);
    clearTimeout(l.timer);
    l.done(how);
  }

  private settleAll(): void {
    for (const id of [...this.lingering.keys()]) this.settle(id, 'gone');
  }

  /** Whether this request (by member id) leases the session now. */
  holds(id: string): boolean {
    return this.holders.has(id);
  }

  /** The one request leasing the session, to whom what names no request may go: none when routed or strict. */
  private sole(): LeaseHolder | undefined {
    if (this.routed || this.strict || this.holders.size !== 1) return undefined;
    return this.holders.values().next().value!.view;
  }

  private fromServer(message: unknown): void {
    if (Array.isArray(message)) {
      for (const m of message) this.fromServer(m);
      return;
    }
    if (!isObject(message)) return;
    const method = typeof message.method === 'string' ? message.method : undefined;
    if (method === undefined) {
      const holder = typeof message.id === 'string' ? this.holders.get(message.id) : undefined;
      if (holder) {
        this.holders.delete(message.id as string);
        holder.view.answered(this, message);
      } else {
        this.dropped('answer', 'an answer to no request leasing the session (a cancelled or timed-out one)');
        // A cancelled request's late answer: the place it kept is free now.
        if (typeof message.id === 'string') this.settle(message.id, 'answered');
      }
      return;
    }
    if (isValidId(message.id)) return this.serverRequest(method, message);
    if (method.endsWith('/list_changed') && method !== 'notifications/roots/list_changed') return this.opts.broadcast(message);
    if (TASK_NOTIFICATIONS.has(method)) {
      const taskId = taskView(message.params)?.taskId;
      const owner = taskId === undefined ? undefined : this.opts.taskOwner(this, taskId);
      if (owner) owner.notified(message);
      else this.dropped('notification', method);
      return;
    }
    if (method === 'notifications/progress') {
      const token = isObject(message.params) ? message.params.progressToken : undefined;
      const holder = token === undefined ? undefined : [...this.holders.values()].find((h) => h.token === token);
      if (holder) holder.view.notified(message);
      else this.dropped('progress', 'progress for no request leasing the session');
      return;
    }
    // A log line or any other notification names no request: it goes to a sole lease holder only.
    const sole = this.sole();
    if (sole) sole.notified(message);
    else this.dropped('notification', method);
  }

  private serverRequest(method: string, message: Json): void {
    if (method === 'ping') {
      void this.upstream.send({ jsonrpc: '2.0', id: message.id, result: {} }).catch(() => undefined);
      return;
    }
    const taskId = relatedTaskId(message.params);
    const owner = taskId !== undefined ? this.opts.taskOwner(this, taskId) : this.sole();
    if (owner) return owner.asked(this, message);
    // No caller to ask: the server hears so at once instead of waiting for an answer that will not come.
    const why = this.routed && this.holders.size > 0 && taskId === undefined
      ? `Method not found: toolgate pools this server's sessions and this one carries several clients' requests at once (pool.concurrency), so nothing says which client could answer ${method.slice(0, 80)}`
      : `Method not found: toolgate pools this server's sessions and no client request is in progress on this one, so no client can answer ${method.slice(0, 80)}`;
    this.dropped('request', method);
    void this.upstream.send(errorResponse(message.id as Id, METHOD_NOT_FOUND, why)).catch(() => undefined);
  }

  private dropped(kind: 'answer' | 'progress' | 'notification' | 'request', what: string): void {
    this.opts.dropped?.(kind);
    this.opts.log.debug({ server: this.opts.server }, `pooled upstream session: dropped ${what.slice(0, 120)}`);
  }

  private closed(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    const views = new Set([...this.holders.values()].map((h) => h.view));
    this.holders.clear();
    for (const view of views) view.failed(this, reason);
    this.opts.died(this, reason);
    // After the pool forgot it: the places its cancelled requests kept are given back.
    this.settleAll();
  }

  close(): Promise<void> {
    this.dead = true;
    this.settleAll();
    this.upstream.onclose = undefined;
    return this.upstream.close();
  }
}
