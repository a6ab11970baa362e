import { Redis } from 'ioredis';
import { RedisApprovalStore } from './redis-approvals.js';
import { parseRedisDsn, type RedisDsn } from './redis-dsn.js';
import { RedisFleet } from './redis-fleet.js';
import { RedisOAuthStore } from './redis-oauth.js';
import { KILLED, type Charge, type CounterStore, type FlagStore, type Grant, type GrantStore, type KillScope, type KillSwitchState, type PinStore, type StateHealth, type StateStore } from './types.js';

/**
 * Every limit of one call in one step. A charge with a window is placed in the window of Redis's
 * clock (TIME), so the gateways' clocks do not matter; one without (tools, tests) uses the
 * caller's `now`. A counter is a hash {v: value, e: window end}, expiring soon after its window.
 * KEYS: one per charge. ARGV: caller's now, then amount, max, expiresAt, window ms per charge.
 * Returns {-1 or the 0-based index of the first charge over its max, Redis's now in ms}.
 */
const RESERVE = `
local t = redis.call('TIME')
local rnow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cnow = tonumber(ARGV[1])
local n = #KEYS
local nows, exps, totals, live = {}, {}, {}, {}
for i = 1, n do
  local b = 2 + (i - 1) * 4
  local amount, max, exp, w = tonumber(ARGV[b]), tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])
  local now = cnow
  if w > 0 then now = rnow; exp = rnow - rnow % w + w end
  nows[i] = now
  exps[i] = exp
  local k = KEYS[i]
  local total = totals[k]
  if total == nil then
    local h = redis.call('HMGET', k, 'v', 'e')
    total = 0
    live[k] = h[1] ~= false and tonumber(h[2]) > now
    if live[k] then total = tonumber(h[1]) end
  end
  total = total + amount
  if total > max then return {i - 1, rnow} end
  totals[k] = total
end
-- A counter still in its window is incremented; a new or ended one starts over and expires soon after its window.
for i = 1, n do
  local k = KEYS[i]
  local amount = ARGV[2 + (i - 1) * 4]
  if live[k] then
    redis.call('HINCRBYFLOAT', k, 'v', amount)
  else
    redis.call('HSET', k, 'v', amount, 'e', exps[i])
    redis.call('PEXPIRE', k, math.max(1, exps[i] - nows[i]) + 1000)
    live[k] = true
  end
end
return {-1, rnow}
`;

/** Gives units back to the window they were taken from; a window that has ended is left alone. ARGV: amount, expiresAt per key. */
const RELEASE = `
for i = 1, #KEYS do
  local amount, exp = tonumber(ARGV[i * 2 - 1]), tonumber(ARGV[i * 2])
  local h = redis.call('HMGET', KEYS[i], 'v', 'e')
  if h[1] and tonumber(h[2]) == exp then
    redis.call('HSET', KEYS[i], 'v', math.max(0, tonumber(h[1]) - amount))
  end
end
return 0
`;

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
  tgReserve(...args: (string | number)[]): Promise<[number, number]>;
  tgRelease(...args: (string | number)[]): Promise<number>;
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
  readonly channel: string;
  /** Settles once this instance hears changes: reads and writes that must not miss one wait for it. */
  readonly subscribed: Promise<void>;
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
    };
    this.client = new Redis(dsn.url, options) as Redis & Scripts;
    this.client.defineCommand('tgReserve', { lua: RESERVE });
    this.client.defineCommand('tgRelease', { lua: RELEASE });
    this.client.defineCommand('tgGrantUpdate', { lua: GRANT_UPDATE, numberOfKeys: 5 });
    this.channel = `${dsn.prefix}:changes`;
    // ioredis's own resubscription after a reconnect leaves its promise unhandled (a quit right after
    // the reconnect fails the process with "Connection is closed."): this link resubscribes itself.
    this.subscriber = new Redis(dsn.url, { ...options, commandTimeout: undefined, enableAutoPipelining: false, autoResubscribe: false });
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
  }

  key(...parts: string[]): string {
    return `${this.dsn.prefix}:${parts.join(':')}`;
  }

  onChange(listener: (what: string) => void, onReconnect: () => void): void {
    this.listeners.add(listener);
    this.reconnected.add(onReconnect);
  }

  /** Resolves once the connection is ready, or rejects after the command timeout with a clear reason. */
  ready(): Promise<void> {
    if (this.client.status === 'ready') return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('the Redis connection is closed'));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.client.off('ready', onReady);
        reject(new Error(`Redis at ${this.dsn.display} is unreachable${this.lastError ? ` (${this.lastError})` : ''}`));
      }, this.dsn.timeoutMs);
      const onReady = () => { clearTimeout(timer); resolve(); };
      this.client.once('ready', onReady);
    });
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
    return { kind: 'redis', status: ready ? 'ok' : 'unavailable', detail: ready ? this.dsn.display : `${this.dsn.display}: ${this.client.status}${this.lastError ? ` (${this.lastError})` : ''}` };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.client.quit(), this.subscriber.quit()]);
    this.client.disconnect();
    this.subscriber.disconnect();
  }
}

/** Counters in Redis: one EVALSHA per decision (ioredis loads the script and re-sends it on NOSCRIPT). */
export class RedisCounterStore implements CounterStore {
  constructor(private readonly link: RedisLink, readonly flags?: RedisFlagStore) {}

  /** The kill switch comes from the mirror (no round trip while it is fresh), then the reservation's one EVALSHA. */
  reserveUnlessKilled(server: string, charges: readonly Charge[], now: number): Promise<number> {
    const killed = this.flags ? this.flags.killedFor(server) : null;
    if (killed instanceof Promise) return killed.then((k) => (k ? KILLED : this.reserve(charges, now)));
    return killed ? Promise.resolve(KILLED) : this.reserve(charges, now);
  }

  private keyOf(c: Charge): string {
    return this.link.key('c', c.window ? c.window.name : c.key);
  }

  reserve(charges: readonly Charge[], now: number): Promise<number> {
    const args: (string | number)[] = [charges.length];
    for (const c of charges) args.push(this.keyOf(c));
    args.push(now);
    for (const c of charges) args.push(c.amount, c.max, c.expiresAt, c.window ? c.window.ms : 0);
    const send = () => this.link.client.tgReserve(...args).then(([failed, rnow]) => {
      for (const c of charges) if (c.window) c.expiresAt = rnow - (rnow % c.window.ms) + c.window.ms;
      return failed;
    });
    return (this.link.client.status === 'ready' ? send() : this.link.ready().then(send)).catch(this.link.failure);
  }

  async release(charges: readonly Charge[]): Promise<void> {
    if (charges.length === 0) return;
    const args: (string | number)[] = [charges.length];
    for (const c of charges) args.push(this.keyOf(c));
    for (const c of charges) args.push(c.amount, c.expiresAt);
    await this.link.ready().then(() => this.link.client.tgRelease(...args)).catch(this.link.failure);
  }

  async value(key: string, now: number): Promise<number> {
    const [v, e] = await this.link.client.hmget(this.link.key('c', key), 'v', 'e');
    return v !== null && Number(e) > now ? Number(v) : 0;
  }
}

/**
 * A copy of shared control state kept in this process, so a decision reads it without a round
 * trip. A change published by any instance marks it stale at once, and the next read waits for
 * Redis; a periodic re-read is the safety net. While Redis is unreachable the last copy stands.
 */
export class Mirror<T> {
  private value: T | undefined;
  private fresh = false;
  private loading: Promise<T> | undefined;
  private generation = 0;

  constructor(private readonly load: () => Promise<T>) {}

  get(): T | Promise<T> {
    if (this.fresh) return this.value!;
    return (this.loading ??= this.refresh());
  }

  invalidate(): void {
    this.generation++;
    this.fresh = false;
    this.loading = undefined;
  }

  async refresh(): Promise<T> {
    const generation = this.generation;
    try {
      const value = await this.load();
      if (generation === this.generation) {
        this.value = value;
        this.fresh = true;
      }
      return value;
    } finally {
      if (generation === this.generation) this.loading = undefined;
    }
  }
}

export class RedisFlagStore implements FlagStore {
  private readonly key: string;
  readonly mirror: Mirror<Map<string, KillSwitchState>>;

  constructor(private readonly link: RedisLink) {
    this.key = link.key('kill');
    this.mirror = new Mirror(async () => {
      await link.subscribed;
      const all = await link.client.hgetall(this.key);
      return new Map(Object.entries(all).map(([scope, json]) => [scope, JSON.parse(json) as KillSwitchState]));
    });
  }

  killedFor(server: string): KillScope | null | Promise<KillScope | null> {
    const m = this.mirror.get();
    return m instanceof Promise ? m.then((all) => killedIn(all, server)) : killedIn(m, server);
  }

  async setKillSwitch(scope: KillScope, on: boolean, reason?: string): Promise<void> {
    const state: KillSwitchState = { scope, on, ...(reason ? { reason } : {}), at: new Date().toISOString() };
    await this.link.client.multi().hset(this.key, scope, JSON.stringify(state)).publish(this.link.channel, 'flags').exec();
    this.mirror.invalidate();
  }

  async listKillSwitches(): Promise<KillSwitchState[]> {
    return [...(await this.mirror.refresh()).values()].sort((a, b) => (a.scope < b.scope ? -1 : 1));
  }
}

function killedIn(all: Map<string, KillSwitchState>, server: string): KillScope | null {
  if (all.get('*')?.on) return '*';
  return all.get(server)?.on ? server : null;
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
    return changed === 1;
  }
}

/** How often shared control state is re-read even without a change message. */
const SAFETY_NET_MS = 5000;

/** Opens the Redis store a `redis://` or `rediss://` DSN names; connects in the background. */
export function openRedisState(dsn: string): StateStore & { link: RedisLink } {
  const link = new RedisLink(parseRedisDsn(dsn));
  const flags = new RedisFlagStore(link);
  const grants = new RedisGrantStore(link);
  const approvals = new RedisApprovalStore(link);
  const mirrors = [flags.mirror, grants.mirror];
  link.onChange((what) => {
    if (what === 'flags') flags.mirror.invalidate();
    else if (what === 'grants') grants.mirror.invalidate();
    else if (what.startsWith('approval ')) approvals.heard(what.slice('approval '.length));
  }, () => { for (const m of mirrors) m.invalidate(); });
  const timer = setInterval(() => { for (const m of mirrors) m.refresh().catch(() => {}); }, SAFETY_NET_MS);
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
    fleet: new RedisFleet(link),
    health: () => link.health(),
    close: async () => {
      clearInterval(timer);
      await link.close();
    },
  };
}
