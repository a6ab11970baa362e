import type { Cluster, Redis } from 'ioredis';
import { RedisFlowStore } from './redis-flows.js';
import { RedisApprovalStore } from './redis-approvals.js';
import { connectRedis } from './redis-connect.js';
import { RedisCounterStore } from './redis-counters.js';
import { parseRedisDsn, type RedisDsn } from './redis-dsn.js';
import { RedisFleet } from './redis-fleet.js';
import { RedisFlagStore } from './redis-flags.js';
import { Generation, RedisStartError, resetAck, type LogFn } from './redis-generation.js';
import { Mirror } from './redis-mirror.js';
import { RedisOAuthStore } from './redis-oauth.js';
import { RedisRequestStateStore } from './redis-request-states.js';
import { type Grant, type GrantStore, type PinStore, type StateHealth, type StateStore } from './types.js';

/**
 * Grant rotation and revocation: only a live grant changes. KEYS: grants, hashes, revoked,
 * channel, new expiries. ARGV: id, value, what, the new expiry on rotation ('' keeps it).
 */
const GRANT_UPDATE = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 or redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 0 end
if ARGV[3] == 'revoke' then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) else redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[5], ARGV[1], ARGV[4]) end
redis.call('PUBLISH', KEYS[4], 'grants')
return 1
`;

interface Scripts {
  tgGrantUpdate(...args: string[]): Promise<number>;
}

/**
 * The connection every Redis store of one gateway shares. Commands wait at most `timeoutMs`. A
 * reservation is only sent on a ready connection and never resent after a disconnect, so a call
 * is counted at most once; its reply lost in a disconnect leaves it counted (the safe side).
 */
export class RedisLink {
  readonly client: Redis & Scripts;
  readonly subscriber: Redis;
  /** Set on a Redis Cluster (see redis-connect.ts). */
  readonly cluster?: Cluster;
  /** A new connection of its own, for blocking reads (XREAD BLOCK). */
  readonly duplicate: () => Redis;
  readonly channel: string;
  /** What every key and the channel start with: the prefix, on a cluster as a hash tag (`{prefix}`) so all of them share one slot. */
  private readonly base: string;
  /** Settles once this instance hears changes: reads and writes that must not miss one wait for it. */
  readonly subscribed: Promise<void>;
  /** The state generation this instance works under (see redis-generation.ts). */
  readonly generation: Generation;
  private readonly listeners = new Set<(what: string) => void>();
  private readonly reconnected = new Set<() => void>();
  private lastError = '';
  private closed = false;

  constructor(readonly dsn: RedisDsn) {
    const options = {
      commandTimeout: dsn.timeoutMs,
      connectTimeout: Math.max(dsn.timeoutMs, 1000),
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      enableAutoPipelining: true,
      retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
      // A socket that never connected can stay half-open after close for ioredis's default 2 s, keeping a CLI command alive.
      disconnectTimeout: 200,
    };
    // ioredis's own resubscription after a reconnect leaves its promise unhandled (a quit right after
    // the reconnect fails the process with "Connection is closed."): this link resubscribes itself.
    const clients = connectRedis(dsn, options, { ...options, commandTimeout: undefined, enableAutoPipelining: false, autoResubscribe: false });
    this.client = clients.client as Redis & Scripts;
    this.subscriber = clients.subscriber;
    this.cluster = clients.cluster;
    this.duplicate = clients.duplicate;
    this.client.defineCommand('tgGrantUpdate', { lua: GRANT_UPDATE, numberOfKeys: 5 });
    this.base = dsn.cluster ? `{${dsn.prefix}}` : dsn.prefix;
    this.channel = `${this.base}:changes`;
    this.generation = new Generation(this);
    const note = (err: Error) => { this.lastError = err.message; };
    this.client.on('error', note);
    this.subscriber.on('error', note);
    this.subscribed = this.subscriber.subscribe(this.channel).then(() => {}, note);
    this.subscriber.on('message', (_channel: string, what: string) => { for (const l of this.listeners) l(what); });
    // Changes published while this instance was cut off never arrive: once subscribed again, re-read everything.
    let first = true;
    this.subscriber.on('ready', () => {
      if (first) { first = false; return; }
      const reread = () => { for (const r of this.reconnected) r(); };
      this.subscriber.subscribe(this.channel).then(reread, (err: Error) => { note(err); reread(); });
    });
    // On a cluster ioredis moves the subscription to another node when its node goes (a failover):
    // messages sent meanwhile are lost, so a node leaving is a reason to re-read too.
    if (this.cluster) this.subscriber.on('-node', () => { for (const r of this.reconnected) r(); });
  }

  key(...parts: string[]): string {
    return `${this.base}:${parts.join(':')}`;
  }

  onChange(listener: (what: string) => void, onReconnect: () => void): void {
    this.listeners.add(listener);
    this.reconnected.add(onReconnect);
  }

  /**
   * Resolves once the connection is ready, or rejects after the command timeout with a clear reason.
   * Callers while it connects share one wait (one 'ready' listener, however many commands queue).
   */
  ready(): Promise<void> {
    if (this.client.status === 'ready') return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('the Redis connection is closed'));
    this.readyWait ??= new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        reject(new Error(`Redis at ${this.dsn.display} is unreachable${this.lastError ? ` (${this.lastError})` : ''}`));
      }, this.dsn.timeoutMs);
      const onReady = () => { clearTimeout(timer); resolve(); };
      this.client.once('ready', onReady);
    }).finally(() => { this.readyWait = undefined; });
    return this.readyWait;
  }

  private readyWait?: Promise<void>;

  /**
   * With `wait=N` in the DSN: after a control change (a grant, the kill switch) is written, WAIT
   * for N replicas on the connection that wrote it (a keyed no-op in the same pipeline takes WAIT
   * to the slot's primary on a cluster). Throws when they did not acknowledge in time: the change
   * is made on the primary, but a failover now could lose it. Without `wait`: nothing.
   */
  async replicated(what: string): Promise<void> {
    const wait = this.dsn.wait;
    if (!wait) return;
    const results = await this.client.pipeline().exists(this.generation.key).wait(wait.replicas, wait.timeoutMs).exec().catch(this.failure);
    const [err, acked] = results?.[1] ?? [new Error('no answer to WAIT'), 0];
    if (err) this.failure(err);
    if ((acked as number) < wait.replicas) {
      this.failure(new Error(`${what} is made on the primary but was not acknowledged by ${wait.replicas} replica${wait.replicas === 1 ? '' : 's'} within ${wait.timeoutMs} ms (wait=${wait.replicas}; ${acked as number} did): a failover now could lose it, so check it again after one`));
    }
  }

  /** A Redis failure as one line that says what happened, for denial messages and logs. */
  failure = (err: Error): never => {
    const why = err.name === 'MaxRetriesPerRequestError' ? 'the connection was lost'
      : /timed out/i.test(err.message) ? `no answer within ${this.dsn.timeoutMs} ms`
        : err.message;
    throw new Error(why.startsWith('Redis at') ? why : `Redis at ${this.dsn.display}: ${why}`);
  };

  health(): StateHealth {
    const ready = this.client.status === 'ready';
    if (ready && this.generation.lost) return { kind: 'redis', status: 'unavailable', detail: `${this.dsn.display}: ${this.generation.lostDetail()}` };
    if (ready && this.generation.evicting) return { kind: 'redis', status: 'degraded', detail: `${this.dsn.display}: ${this.generation.evicting}` };
    return { kind: 'redis', status: ready ? 'ok' : 'unavailable', detail: ready ? this.dsn.display : `${this.dsn.display}: ${this.client.status}${this.lastError ? ` (${this.lastError})` : ''}` };
  }

  /**
   * For commands run once (the CLI) and at start: resolves when the connection is ready, or
   * rejects with one line naming the DSN at the first connection error or after the command
   * timeout, or when a redis:// DSN names a node of a Redis Cluster (its keys live on other nodes:
   * a transaction would end in EXECABORT, a read in CLUSTERDOWN or MOVED).
   */
  connected(): Promise<void> {
    this.checked ??= this.reachable().then(() => this.notClusterNode()).catch((err: Error) => { this.checked = undefined; throw err; });
    return this.checked;
  }

  private checked?: Promise<void>;

  private async notClusterNode(): Promise<void> {
    if (this.dsn.cluster) return;
    // A managed Redis may refuse INFO; then there is nothing to tell.
    const info = await this.client.info('cluster').catch(() => '');
    if (/^cluster_enabled:1\b/m.test(info)) {
      throw new Error(`Redis at ${this.dsn.display} is a node of a Redis Cluster: name the cluster as the state DSN, redis+cluster://HOST:PORT[,HOST:PORT…]`);
    }
  }

  private reachable(): Promise<void> {
    if (this.client.status === 'ready') return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.client.off('ready', done);
        this.client.off('error', done);
        if (!err) return resolve();
        const message = /Unknown RESP type|Protocol error/i.test(err.message) ? 'what answers there does not speak the Redis protocol' : err.message;
        const why = message ? ` (${message})` : '';
        reject(new Error(`Redis at ${this.dsn.display} is unreachable${why}`));
      };
      const timer = setTimeout(() => done(new Error(this.lastError || `no connection within ${this.dsn.timeoutMs} ms`)), this.dsn.timeoutMs);
      this.client.once('ready', done);
      this.client.once('error', done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()]);
    this.client.disconnect();
    this.subscriber.disconnect();
  }
}

export class RedisPinStore implements PinStore {
  constructor(private readonly link: RedisLink) {}

  async get(server: string): Promise<Record<string, string> | null> {
    const json = await this.link.client.hget(this.link.key('pins'), server);
    return json ? (JSON.parse(json) as Record<string, string>) : null;
  }

  async set(server: string, pins: Record<string, string>): Promise<void> {
    await this.link.client.hset(this.link.key('pins'), server, JSON.stringify(pins));
  }
}

interface GrantIndex { byHash: Map<string, Grant>; all: Grant[] }

/** Grants as hashes keyed by id: the grant, its token hash, when it was revoked, and its expiry as set by a rotation. */
export class RedisGrantStore implements GrantStore {
  private readonly keys: [string, string, string, string];
  readonly mirror: Mirror<GrantIndex>;

  constructor(private readonly link: RedisLink) {
    this.keys = [link.key('grants'), link.key('grants', 'token'), link.key('grants', 'revoked'), link.key('grants', 'expiry')];
    this.mirror = new Mirror(async () => {
      await link.subscribed;
      const [grants, hashes, revoked, expiry] = await Promise.all(this.keys.map((k) => link.client.hgetall(k)));
      const index: GrantIndex = { byHash: new Map(), all: [] };
      for (const [id, json] of Object.entries(grants)) {
        const grant = JSON.parse(json) as Grant;
        if (Object.hasOwn(revoked, id)) grant.revokedAt = revoked[id];
        if (Object.hasOwn(expiry, id)) grant.expiresAt = expiry[id];
        index.all.push(grant);
        if (Object.hasOwn(hashes, id)) index.byHash.set(hashes[id], grant);
      }
      index.all.sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));
      return index;
    });
  }

  async create(grant: Grant, tokenHash: string): Promise<void> {
    const { revokedAt: _, ...rest } = grant;
    await this.link.client.multi().hset(this.keys[0], grant.id, JSON.stringify(rest)).hset(this.keys[1], grant.id, tokenHash)
      .publish(this.link.channel, 'grants').exec();
    this.mirror.invalidate();
    await this.link.replicated(`the grant ${grant.id}`);
  }

  byTokenHash(tokenHash: string): Grant | null | Promise<Grant | null> {
    const m = this.mirror.get();
    const find = (index: GrantIndex) => {
      const g = index.byHash.get(tokenHash);
      return g ? { ...g, tags: [...g.tags] } : null;
    };
    return m instanceof Promise ? m.then(find) : find(m);
  }

  async list(): Promise<Grant[]> {
    return (await this.mirror.refresh()).all.map((g) => ({ ...g, tags: [...g.tags] }));
  }

  rotate(id: string, tokenHash: string, expiresAt?: string): Promise<boolean> {
    return this.update(id, tokenHash, 'rotate', expiresAt ?? '');
  }

  revoke(id: string, at: string): Promise<boolean> {
    return this.update(id, at, 'revoke', '');
  }

  private async update(id: string, value: string, what: string, expiresAt: string): Promise<boolean> {
    const [grants, hashes, revoked, expiry] = this.keys;
    const changed = await this.link.client.tgGrantUpdate(grants, hashes, revoked, this.link.channel, expiry, id, value, what, expiresAt);
    this.mirror.invalidate();
    if (changed === 1) await this.link.replicated(`the ${what === 'revoke' ? 'revocation' : 'rotation'} of grant ${id}`);
    return changed === 1;
  }
}

/**
 * How often the copies of grants and kill switches are re-read even without a change message: a
 * revocation or kill switch set elsewhere applies within a second even if its message was lost.
 */
const MIRROR_REREAD_MS = 1000;
/** How often the generation marker and the eviction policy are checked without a message. */
const SAFETY_NET_MS = 5000;

/** Opens the Redis store a `redis://`, `rediss://` or `redis+cluster://` DSN names; connects in the background. */
export function openRedisState(dsn: string): StateStore & { link: RedisLink } {
  const link = new RedisLink(parseRedisDsn(dsn));
  const flags = new RedisFlagStore(link);
  const grants = new RedisGrantStore(link);
  const approvals = new RedisApprovalStore(link);
  const mirrors = [flags.mirror, grants.mirror];
  const fleet = new RedisFleet(link);
  // Messages are wake-ups only: whatever they say, what a client sees is read from the store.
  link.onChange((what) => {
    if (what === 'flags') flags.mirror.invalidate();
    else if (what === 'grants') grants.mirror.invalidate();
    else if (what === 'generation') void link.generation.check();
    else if (what.startsWith('approval-id ')) approvals.heard(what.slice('approval-id '.length));
  }, () => { for (const m of mirrors) m.invalidate(); void link.generation.check(); approvals.recheck(); });
  const reread = setInterval(() => { for (const m of mirrors) m.refresh().catch(() => {}); }, MIRROR_REREAD_MS);
  const timer = setInterval(() => {
    void link.generation.check();
    void link.generation.recheckEviction();
  }, SAFETY_NET_MS);
  reread.unref();
  timer.unref();
  return {
    kind: 'redis',
    link,
    counters: new RedisCounterStore(link, flags),
    flags,
    pins: new RedisPinStore(link),
    grants,
    approvals,
    oauth: new RedisOAuthStore(link),
    requestStates: new RedisRequestStateStore(link),
    flows: new RedisFlowStore(link),
    fleet,
    health: () => link.health(),
    connect: () => link.connected(),
    resetGeneration: async (who: string) => ({ ...(await resetAck(link, who)), where: `${link.dsn.display} (prefix ${link.dsn.prefix})` }),
    begin: async (log: LogFn) => {
      try {
        await link.connected();
      } catch (err) {
        throw new RedisStartError(`${(err as Error).message}: toolgate needs its state store at start (check that Redis runs and the state DSN)`);
      }
      await link.generation.begin(log, async () => (await fleet.instances()).some((i) => i.generation !== undefined)).catch((err: Error) => {
        if (err instanceof RedisStartError) throw err;
        throw new RedisStartError(`Redis at ${link.dsn.display}: ${err.message}`);
      });
    },
    close: async () => {
      clearInterval(reread);
      clearInterval(timer);
      await link.close();
    },
  };
}
