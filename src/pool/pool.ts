/**
 * A generic pool of resources: up to `max`, each handed out to at most `concurrency` leases at a
 * time (1: exclusively), the rest of the requests waiting in a bounded FIFO queue for a bounded time. Idle resources beyond
 * `size` are closed after `idleMs`; a resource found broken is dropped (and replaced on demand).
 * A request may name its owner: an owner holds at most `maxPerOwner` leases at once (its further
 * requests wait while others' are served), so one owner cannot hold every resource of a shared pool.
 * Knows nothing of MCP: src/pool/upstreams.ts pools upstream sessions with it.
 */

export interface PoolOptions<T> {
  size: number;
  max: number;
  idleMs: number;
  queueTimeoutMs: number;
  queueMax: number;
  /** Leases one owner may hold at once (default: no limit). */
  maxPerOwner?: number;
  /** Leases one resource serves at once (default 1: exclusive). */
  concurrency?: number;
  /** Starts a resource (an upstream session); rejects when it cannot. */
  create(): Promise<T>;
  /** Closes one the pool no longer keeps (idle beyond size, dropped, or the pool closed). */
  destroy(resource: T, why: string): void;
  /**
   * Why a request was refused for want of a resource: all busy and the queue full, or the wait too
   * long; `capped`: its owner held maxPerOwner leases meanwhile.
   */
  exhausted(why: 'queue_full' | 'queue_timeout', capped: boolean): Error;
  /** A resource that was asked for by name is gone. */
  gone(): Error;
  /** Whether a resource given back is closed (once no lease holds it) instead of handed on (default: never); it takes no new lease meanwhile. */
  spent?(resource: T): boolean;
}

export interface Lease<T> {
  readonly resource: T;
  /** Gives the resource back for the next request. */
  release(): void;
  /** The resource is broken: it is closed and forgotten. */
  drop(why: string): void;
}

interface Waiter<T> {
  /** Only this resource will do (a task's requests go to the session that runs it). */
  want?: T;
  owner?: string;
  /** Gives the lease back at once (it only needs one resource to exist): starts none of its own beside another waiter's. */
  brief?: boolean;
  resolve(lease: Lease<T>): void;
  reject(err: Error): void;
  timer?: NodeJS.Timeout;
}

interface Entry<T> { resource: T; leases: number; idleTimer?: NodeJS.Timeout }

/** Two owners stay apart whatever their names. */
const NO_OWNER = Symbol('no owner');

export class Pool<T> {
  /** Idle ones at the end, most recently used last: they are leased first, so the others idle out. */
  private readonly entries: Entry<T>[] = [];
  private starting = 0;
  private readonly waiters: Waiter<T>[] = [];
  /** Leases held now, by owner. */
  private readonly held = new Map<string | symbol, number>();
  private closed = false;

  private readonly concurrency: number;

  constructor(private readonly opts: PoolOptions<T>) {
    this.concurrency = opts.concurrency ?? 1;
  }

  get size(): number { return this.entries.length + this.starting; }
  /** Resources holding at least one lease. */
  get busy(): number { return this.entries.filter((e) => e.leases > 0).length; }
  /** Leases held now (requests in flight on the resources). */
  get leased(): number { return this.entries.reduce((n, e) => n + e.leases, 0); }
  get queued(): number { return this.waiters.length; }
  resources(): T[] { return this.entries.map((e) => e.resource); }

  /**
   * A lease on any resource (`want`: on that one only) for `owner`, once one is free and the owner
   * holds fewer than maxPerOwner; rejects when exhausted, stopped or closed. `brief`: the caller gives
   * it back at once (a pooled server's initialize answer), so a request queued beside it waits for
   * the same one rather than starting another.
   */
  acquire(want?: T, signal?: AbortSignal, owner?: string, brief = false): Promise<Lease<T>> {
    if (this.closed) return Promise.reject(this.opts.gone());
    if (want !== undefined && !this.entries.some((e) => e.resource === want)) return Promise.reject(this.opts.gone());
    const capped = !this.underCap(owner);
    const free = capped ? undefined : this.free(want);
    if (free) return Promise.resolve(this.lease(free, owner));
    if (this.waiters.length >= this.opts.queueMax && (want !== undefined || capped || this.size >= this.opts.max) && !this.makeRoom(owner)) {
      return Promise.reject(this.opts.exhausted('queue_full', capped));
    }
    return new Promise<Lease<T>>((resolve, reject) => {
      const waiter: Waiter<T> = { want, owner, brief, resolve, reject };
      const leave = (err: Error) => {
        const at = this.waiters.indexOf(waiter);
        if (at < 0) return;
        this.waiters.splice(at, 1);
        clearTimeout(waiter.timer);
        reject(err);
      };
      waiter.timer = setTimeout(() => leave(this.opts.exhausted('queue_timeout', !this.underCap(owner))), this.opts.queueTimeoutMs);
      signal?.addEventListener('abort', () => leave(new Error('the request was cancelled while it waited for an upstream session')), { once: true });
      this.waiters.push(waiter);
      if (want === undefined && !capped) this.fill();
    });
  }

  /**
   * The queue is full: an owner that waits for fewer places than another (by two or more) takes the
   * place of that one's newest waiter, which is refused (queue full, never forwarded). One owner
   * (a grant of a shared pool at its max_per_grant, whose further requests wait on its own) could
   * otherwise fill the queue, and every other owner's request that had to wait was refused at once.
   */
  private makeRoom(owner: string | undefined): boolean {
    if (owner === undefined) return false;
    const waiting = new Map<string, number>();
    for (const w of this.waiters) if (w.owner !== undefined) waiting.set(w.owner, (waiting.get(w.owner) ?? 0) + 1);
    let most: string | undefined;
    for (const [o, n] of waiting) if (most === undefined || n > waiting.get(most)!) most = o;
    if (most === undefined || most === owner || waiting.get(most)! <= (waiting.get(owner) ?? 0) + 1) return false;
    let at = this.waiters.length - 1;
    while (this.waiters[at].owner !== most) at--;
    const [evicted] = this.waiters.splice(at, 1);
    clearTimeout(evicted.timer);
    evicted.reject(this.opts.exhausted('queue_full', !this.underCap(most)));
    return true;
  }

  private underCap(owner: string | undefined): boolean {
    return (this.held.get(owner ?? NO_OWNER) ?? 0) < (this.opts.maxPerOwner ?? Infinity);
  }

  /** The first waiter this resource suits whose owner may take another lease. */
  private waiterFor(resource: T): number {
    return this.waiters.findIndex((w) => (w.want === undefined || w.want === resource) && this.underCap(w.owner));
  }

  /** Whether a resource may take another lease now. */
  private room(e: Entry<T>): boolean {
    return e.leases < this.concurrency && !this.opts.spent?.(e.resource);
  }

  /** The least leased resource with room (of equals the most recently used, so that the others idle out). */
  private free(want?: T): Entry<T> | undefined {
    let best: Entry<T> | undefined;
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (this.room(e) && (want === undefined || e.resource === want) && (!best || e.leases < best.leases)) best = e;
    }
    return best;
  }

  private lease(entry: Entry<T>, owner: string | undefined): Lease<T> {
    entry.leases++;
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    const key = owner ?? NO_OWNER;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
    let done = false;
    const unhold = () => {
      const n = (this.held.get(key) ?? 1) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
    };
    return {
      resource: entry.resource,
      release: () => {
        if (done) return;
        done = true;
        unhold();
        entry.leases--;
        if (this.opts.spent?.(entry.resource)) {
          // Its other leases run to their end; then it is closed.
          if (entry.leases === 0) this.remove(entry, 'spent: a request cancelled on it may still run');
        } else this.handOn(entry);
        this.serveIdle();
      },
      drop: (why) => {
        if (done) return;
        done = true;
        unhold();
        this.remove(entry, why);
        this.serveIdle();
      },
    };
  }

  /** Leases of this resource to the first waiters it suits, while it has room. */
  private giveToWaiters(entry: Entry<T>): void {
    while (this.room(entry)) {
      const at = this.waiterFor(entry.resource);
      if (at < 0) break;
      const [waiter] = this.waiters.splice(at, 1);
      clearTimeout(waiter.timer);
      waiter.resolve(this.lease(entry, waiter.owner));
    }
  }

  /** Idle resources go to waiters whose owner may now take a lease (one of its leases ended). */
  private serveIdle(): void {
    if (this.opts.maxPerOwner === undefined) return;
    for (const entry of [...this.entries]) {
      this.giveToWaiters(entry);
    }
    this.fill();
  }

  /** A freed resource: to the first waiters it suits while it has room, else idle (and closed after idleMs when beyond size). */
  private handOn(entry: Entry<T>): void {
    if (!this.entries.includes(entry)) return;
    this.giveToWaiters(entry);
    if (entry.leases > 0) return;
    // Most recently used last: handed out first next time.
    this.entries.splice(this.entries.indexOf(entry), 1);
    this.entries.push(entry);
    entry.idleTimer = setTimeout(() => {
      entry.idleTimer = undefined;
      if (entry.leases === 0 && this.entries.length > this.opts.size) this.remove(entry, 'idle beyond the pool size');
    }, this.opts.idleMs);
    entry.idleTimer.unref();
  }

  /** Forgets a resource and closes it; waiters that wanted only it fail, and one is started for the others if need be. */
  remove(resourceOrEntry: T | Entry<T>, why: string): void {
    const entry = this.entries.find((e) => e === resourceOrEntry || e.resource === resourceOrEntry);
    if (!entry) return;
    this.entries.splice(this.entries.indexOf(entry), 1);
    clearTimeout(entry.idleTimer);
    this.opts.destroy(entry.resource, why);
    for (const w of this.waiters.filter((x) => x.want === entry.resource)) {
      this.waiters.splice(this.waiters.indexOf(w), 1);
      clearTimeout(w.timer);
      w.reject(this.opts.gone());
    }
    this.fill();
  }

  /**
   * Starts resources while requests that any one would suit wait for more than are starting.
   * Brief waiters together need one, and none beside a longer one: the first pooled request of a
   * grant used to start two upstream processes, one for the initialize answer, one for the
   * tools/list queued behind it, the second then idle until idle_timeout.
   */
  private fill(): void {
    const any = this.waiters.filter((w) => w.want === undefined && this.underCap(w.owner));
    const long = any.filter((w) => !w.brief).length;
    // Each new resource serves `concurrency` of them.
    const needed = long > 0 ? Math.ceil(long / this.concurrency) : Math.min(any.length, 1);
    while (!this.closed && this.starting < needed && this.size < this.opts.max) this.start();
  }

  private start(): void {
    this.starting++;
    this.opts.create().then((resource) => {
      this.starting--;
      if (this.closed) return this.opts.destroy(resource, 'the pool was closed');
      const entry: Entry<T> = { resource, leases: 0 };
      this.entries.push(entry);
      this.handOn(entry);
    }, (err: Error) => {
      this.starting--;
      // The oldest request that any resource would suit hears why none could start.
      const at = this.waiters.findIndex((w) => w.want === undefined && this.underCap(w.owner));
      if (at >= 0) {
        const [waiter] = this.waiters.splice(at, 1);
        clearTimeout(waiter.timer);
        waiter.reject(err);
      }
      // Others that waited on this start (beside a brief one) get their own attempt.
      this.fill();
    });
  }

  /** Closes a resource now if no lease holds it (one that is spent and idle). */
  retire(resource: T, why: string): void {
    const entry = this.entries.find((e) => e.resource === resource);
    if (entry && entry.leases === 0) this.remove(entry, why);
  }

  /** Closes every resource; waiting requests fail. */
  close(why: string): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(this.opts.gone());
    }
    for (const e of this.entries.splice(0)) {
      clearTimeout(e.idleTimer);
      this.opts.destroy(e.resource, why);
    }
  }
}
