/**
 * One pooled upstream session: a server process (or connection) initialized once, then serving
 * one lease at a time. What the server sends is routed to the lease it belongs to, never to
 * another: the answer by the id toolgate gave the leased request, progress by the token toolgate
 * gave it, requests and other notifications to the request leasing it now. What comes between
 * leases has no caller (see docs/gateway.md, "Pooled upstream sessions").
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
  /** The request leasing this session now: its member id and progress token. */
  private holder?: { view: LeaseHolder; id: string; token?: string };
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
    this.holder = { view, id: message.id as string, token };
    return this.upstream.send(message);
  }

  /** The lease ended (answered, cancelled): what comes for it from now on is dropped. */
  ended(view: LeaseHolder): void {
    if (this.holder?.view === view) this.holder = undefined;
  }

  /** Whether this request (by member id) leases the session now. */
  holds(id: string): boolean {
    return this.holder?.id === id;
  }

  private fromServer(message: unknown): void {
    if (Array.isArray(message)) {
      for (const m of message) this.fromServer(m);
      return;
    }
    if (!isObject(message)) return;
    const holder = this.holder;
    const method = typeof message.method === 'string' ? message.method : undefined;
    if (method === undefined) {
      if (holder && message.id === holder.id) {
        this.holder = undefined;
        holder.view.answered(this, message);
      } else this.dropped('an answer to no request leasing the session (a cancelled or timed-out one)');
      return;
    }
    if (isValidId(message.id)) return this.serverRequest(method, message);
    if (method.endsWith('/list_changed') && method !== 'notifications/roots/list_changed') return this.opts.broadcast(message);
    if (TASK_NOTIFICATIONS.has(method)) {
      const taskId = taskView(message.params)?.taskId;
      const owner = taskId === undefined ? undefined : this.opts.taskOwner(this, taskId);
      if (owner) owner.notified(message);
      else this.dropped(method);
      return;
    }
    if (method === 'notifications/progress') {
      const token = isObject(message.params) ? message.params.progressToken : undefined;
      if (holder && holder.token !== undefined && token === holder.token) holder.view.notified(message);
      else this.dropped('progress for no request leasing the session');
      return;
    }
    if (holder && !this.strict) holder.view.notified(message);
    else this.dropped(method);
  }

  private serverRequest(method: string, message: Json): void {
    if (method === 'ping') {
      void this.upstream.send({ jsonrpc: '2.0', id: message.id, result: {} }).catch(() => undefined);
      return;
    }
    const taskId = relatedTaskId(message.params);
    const owner = taskId !== undefined ? this.opts.taskOwner(this, taskId) : this.strict ? undefined : this.holder?.view;
    if (owner) return owner.asked(this, message);
    // No caller to ask: the server hears so at once instead of waiting for an answer that will not come.
    const why = `Method not found: toolgate pools this server's sessions and no client request is in progress on this one, so no client can answer ${method.slice(0, 80)}`;
    void this.upstream.send(errorResponse(message.id as Id, METHOD_NOT_FOUND, why)).catch(() => undefined);
  }

  private dropped(what: string): void {
    this.opts.log.debug({ server: this.opts.server }, `pooled upstream session: dropped ${what.slice(0, 120)}`);
  }

  private closed(reason: string): void {
    if (this.dead) return;
    this.dead = true;
    const holder = this.holder;
    this.holder = undefined;
    holder?.view.failed(this, reason);
    this.opts.died(this, reason);
  }

  close(): Promise<void> {
    this.dead = true;
    this.upstream.onclose = undefined;
    return this.upstream.close();
  }
}
