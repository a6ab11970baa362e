import type { RedisLink } from './redis.js';
import { primaries } from './redis-connect.js';
import type { OAuthRecord, OAuthStore } from './types.js';

/** Reads a record and deletes it in one step, if it is live at ARGV[1]. */
const TAKE = `
local h = redis.call('HMGET', KEYS[1], 'v', 'e')
redis.call('DEL', KEYS[1])
if h[1] and tonumber(h[2]) > tonumber(ARGV[1]) then return h[1] end
return false
`;

/**
 * Caps checked and records written in one step. A capped prefix has an index, a sorted set of the
 * record keys under it (score: expiry), so counting reads only those keys, never a SCAN; a key
 * deleted or expired since is dropped from the index when counted.
 * KEYS: one index per cap, then one per record. ARGV: now, number of caps, max per cap, then per
 * record: value, expiresAt, the 1-based caps it counts towards (comma-separated).
 * Returns the 0-based index of the first full cap, or -1 when everything was written.
 */
const PUT_IF_UNDER = `
local now, m = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 1, m do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  local n = 0
  for _, k in ipairs(redis.call('ZRANGE', KEYS[i], 0, -1)) do
    local e = redis.call('HGET', k, 'e')
    if e and tonumber(e) > now then n = n + 1 else redis.call('ZREM', KEYS[i], k) end
  end
  if n >= tonumber(ARGV[2 + i]) then return i - 1 end
end
local b = 3 + m
for j = m + 1, #KEYS do
  local v, e, caps = ARGV[b], tonumber(ARGV[b + 1]), ARGV[b + 2]
  b = b + 3
  local keep = math.max(e, now) + 60000
  redis.call('HSET', KEYS[j], 'v', v, 'e', e)
  redis.call('PEXPIREAT', KEYS[j], keep)
  for c in string.gmatch(caps, '%d+') do
    local z = KEYS[tonumber(c)]
    redis.call('ZADD', z, e, KEYS[j])
    if redis.call('PTTL', z) < 0 then redis.call('PEXPIREAT', z, keep) else redis.call('PEXPIREAT', z, keep, 'GT') end
  end
end
return -1
`;

/**
 * The OAuth server's records, one hash {v, e} each, shared by the fleet (a code issued by one
 * instance can be redeemed at another). Liveness is judged against the caller's `now`, like the
 * other stores; Redis also drops each record a minute after its expiry.
 */
export class RedisOAuthStore implements OAuthStore {
  private readonly take_: (...args: (string | number)[]) => Promise<string | null>;
  private readonly putIfUnder_: (...args: (string | number)[]) => Promise<number>;

  constructor(private readonly link: RedisLink) {
    link.client.defineCommand('tgOAuthTake', { lua: TAKE, numberOfKeys: 1 });
    link.client.defineCommand('tgOAuthPutIfUnder', { lua: PUT_IF_UNDER, numberOfKeys: 0 });
    this.putIfUnder_ = (...args) => (link.client as unknown as { tgOAuthPutIfUnder(...a: (string | number)[]): Promise<number> }).tgOAuthPutIfUnder(...args);
    this.take_ = (...args) => (link.client as unknown as { tgOAuthTake(...a: (string | number)[]): Promise<string | null> }).tgOAuthTake(...args);
  }

  private key(key: string): string {
    return this.link.key('oauth', key);
  }

  async put(key: string, value: string, expiresAt: number): Promise<void> {
    const k = this.key(key);
    await this.link.client.multi().hset(k, 'v', value, 'e', expiresAt).pexpireat(k, Math.max(expiresAt, Date.now()) + 60_000).exec();
  }

  async get(key: string, now: number): Promise<string | null> {
    const [v, e] = await this.link.client.hmget(this.key(key), 'v', 'e');
    return v !== null && Number(e) > now ? v : null;
  }

  async take(key: string, now: number): Promise<string | null> {
    return this.take_(this.key(key), now).catch(this.link.failure);
  }

  async delete(key: string): Promise<void> {
    await this.link.client.del(this.key(key));
  }

  async count(prefix: string, now: number): Promise<number> {
    let n = 0;
    const pattern = `${this.key(prefix).replace(/[*?[\]\\]/g, '\\$&')}*`;
    // SCAN walks one node: on a cluster, every primary (the keys are all in one slot, so on one of them).
    for (const node of primaries(this.link)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        const expiries = await Promise.all(keys.map((k) => this.link.client.hget(k, 'e')));
        n += expiries.filter((e) => e !== null && Number(e) > now).length;
      } while (cursor !== '0');
    }
    return n;
  }

  async putIfUnder(records: readonly OAuthRecord[], caps: readonly { prefix: string; max: number }[], now: number): Promise<number> {
    const keys = [...caps.map((c) => this.link.key('oauth-index', c.prefix)), ...records.map((r) => this.key(r.key))];
    const args: (string | number)[] = [keys.length, ...keys, now, caps.length, ...caps.map((c) => c.max)];
    for (const r of records) {
      args.push(r.value, r.expiresAt, caps.flatMap((c, i) => (r.key.startsWith(c.prefix) ? [i + 1] : [])).join(','));
    }
    return this.link.ready().then(() => this.putIfUnder_(...args)).catch(this.link.failure);
  }
}
