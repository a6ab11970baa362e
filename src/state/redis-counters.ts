import type { RedisLink } from './redis.js';
import type { RedisFlagStore } from './redis-flags.js';
import { KILLED, STATE_LOST, type Charge, type CounterStore } from './types.js';
import { againAfterFailover } from './redis-connect.js';

/**
 * Every limit of one call in one step. A charge with a window is placed in the window of Redis's
 * clock (TIME), so the gateways' clocks do not matter; one without (tools, tests) uses the
 * caller's `now`. A counter is a hash {v: value, e: window end}, expiring soon after its window.
 * KEYS: one per charge, then the generation marker, then the reservation sequence. ARGV: caller's
 * now, then amount, max, expiresAt, window ms per charge, then the marker text this instance
 * works under. Returns {-1, -3 (the marker is gone or changed: state was lost, nothing taken) or
 * the 0-based index of the first charge over its max, Redis's now in ms, the sequence number}.
 * The sequence goes up by one per reservation: one lower than an instance saw before means Redis
 * went back to an older snapshot (see Generation.sequence).
 */
const RESERVE = `
local t = redis.call('TIME')
local rnow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cnow = tonumber(ARGV[1])
local n = #KEYS - 2
if n > 0 and redis.call('GET', KEYS[n + 1]) ~= ARGV[#ARGV] then return {-3, rnow, 0} end
local seq = 0
if n > 0 then seq = redis.call('INCR', KEYS[n + 2]) end
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
  if total > max then return {i - 1, rnow, seq} end
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
return {-1, rnow, seq}
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

interface CounterScripts {
  tgReserve(...args: (string | number)[]): Promise<[number, number, number]>;
  tgRelease(...args: (string | number)[]): Promise<number>;
}

type Reply = [number, number, number];

/**
 * On a cluster the scripts go whole (EVAL), never as EVALSHA: a primary that has not run them yet
 * (Redis does not replicate its script cache, so every primary after a failover) would answer
 * NOSCRIPT, and ioredis's re-send after it lets later reservations overtake earlier ones.
 */
function whole(client: { call(command: string, ...args: (string | number)[]): unknown }): CounterScripts {
  return {
    tgReserve: (...args) => client.call('eval', RESERVE, ...args) as Promise<Reply>,
    tgRelease: (...args) => client.call('eval', RELEASE, ...args) as Promise<number>,
  };
}

/**
 * Counters in Redis: one EVALSHA per decision (ioredis loads the script and re-sends it on
 * NOSCRIPT). With `wait=N` in the DSN, WAIT follows the script on the same connection (one
 * pipeline, so on a cluster it reaches the slot's primary): a reservation counts only once N
 * replicas hold it, so a failover cannot lose it.
 */
export class RedisCounterStore implements CounterStore {
  private readonly scripts: CounterScripts;

  constructor(private readonly link: RedisLink, readonly flags?: RedisFlagStore) {
    link.client.defineCommand('tgReserve', { lua: RESERVE });
    link.client.defineCommand('tgRelease', { lua: RELEASE });
    this.scripts = link.cluster ? whole(link.client) : link.client as unknown as CounterScripts;
  }

  /** The kill switch comes from the mirror (no round trip while it is fresh), then the reservation's one EVALSHA. */
  reserveUnlessKilled(server: string, charges: readonly Charge[], now: number): Promise<number> {
    const killed = this.flags ? this.flags.killedFor(server) : null;
    if (killed instanceof Promise) return killed.then((k) => (k ? KILLED : this.reserve(charges, now)));
    return killed ? Promise.resolve(KILLED) : this.reserve(charges, now);
  }

  private keyOf(c: Charge): string {
    return this.link.key('c', c.window ? c.window.name : c.key);
  }

  /**
   * One EVALSHA that also checks the generation marker (no extra round trip). While state is
   * lost, limited calls are refused here without one, after a check (one GET shared by concurrent
   * calls) of whether an operator has acknowledged the loss since.
   */
  reserve(charges: readonly Charge[], now: number): Promise<number> {
    const generation = this.link.generation;
    // A refusal as state lost is answered only once the lost marker this instance writes is in Redis:
    // otherwise another instance could still grant a call made after this one was refused.
    const refused = () => generation.marked().then(() => STATE_LOST);
    const expected = charges.length === 0 ? '' : generation.expected();
    if (expected === null) return generation.check().then(() => (generation.lost ? refused() : this.reserve(charges, now)));
    if (expected instanceof Promise) return expected.then(() => this.reserve(charges, now), this.link.failure);
    const args: (string | number)[] = [charges.length + 2];
    for (const c of charges) args.push(this.keyOf(c));
    args.push(generation.key, generation.seqKey, now);
    for (const c of charges) args.push(c.amount, c.max, c.expiresAt, c.window ? c.window.ms : 0);
    args.push(expected);
    const send = () => this.send(args).then(([failed, rnow, seq]) => {
      for (const c of charges) if (c.window) c.expiresAt = rnow - (rnow % c.window.ms) + c.window.ms;
      if (failed !== STATE_LOST) {
        // A sequence lower than one seen before: the counters went back with an older snapshot; this call is refused too.
        generation.sequence(seq);
        return generation.lost ? refused() : failed;
      }
      // Tried again only under a marker this instance adopted since (an acknowledgement), so never in a loop.
      return generation.stale().then(() => (generation.lost || generation.expected() === expected ? refused() : this.reserve(charges, now)));
    });
    return (this.link.client.status === 'ready' ? send() : this.link.ready().then(send)).catch(this.link.failure);
  }

  async release(charges: readonly Charge[]): Promise<void> {
    if (charges.length === 0) return;
    const args: (string | number)[] = [charges.length];
    for (const c of charges) args.push(this.keyOf(c));
    for (const c of charges) args.push(c.amount, c.expiresAt);
    await this.link.ready().then(() => againAfterFailover(this.link.cluster, () => this.scripts.tgRelease(...args))).catch(this.link.failure);
  }

  /** The reservation, sent again if it reached a primary demoted by a failover (it did not run there). */
  private send(args: (string | number)[]): Promise<Reply> {
    return againAfterFailover(this.link.cluster, () => this.sendOnce(args));
  }

  /**
   * The reservation script, then (with `wait`) WAIT in the same pipeline. A reservation the replicas
   * did not acknowledge in time is refused as a store error (it stays counted on the primary, the
   * safe side), and its sequence number is not remembered: a failover that loses it is no rollback.
   */
  private sendOnce(args: (string | number)[]): Promise<Reply> {
    const wait = this.link.dsn.wait;
    if (!wait) return this.scripts.tgReserve(...args);
    const pipeline = this.link.client.pipeline();
    (this.link.cluster ? whole(pipeline) : pipeline as unknown as CounterScripts).tgReserve(...args);
    pipeline.wait(wait.replicas, wait.timeoutMs);
    return pipeline.exec().then((results) => {
      const [[err, reply], [waitErr, acked]] = results as [[Error | null, Reply], [Error | null, number]];
      if (err) throw err;
      if (reply[0] !== -1 || reply[2] === 0) return reply;
      if (waitErr) throw waitErr;
      if (acked < wait.replicas) {
        throw new Error(`the reservation was not acknowledged by ${wait.replicas} replica${wait.replicas === 1 ? '' : 's'} within ${wait.timeoutMs} ms (wait=${wait.replicas}; ${acked} did)`);
      }
      return reply;
    });
  }

  async value(key: string, now: number): Promise<number> {
    const [v, e] = await this.link.client.hmget(this.link.key('c', key), 'v', 'e');
    return v !== null && Number(e) > now ? Number(v) : 0;
  }
}

