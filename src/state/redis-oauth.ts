import type { RedisLink } from './redis.js';
import type { OAuthStore } from './types.js';

/** Reads a record and deletes it in one step, if it is live at ARGV[1]. */
const TAKE = `
local h = redis.call('HMGET', KEYS[1], 'v', 'e')
redis.call('DEL', KEYS[1])
if h[1] and tonumber(h[2]) > tonumber(ARGV[1]) then return h[1] end
return false
`;

/**
 * The OAuth server's records, one hash {v, e} each, shared by the fleet (a code issued by one
 * instance can be redeemed at another). Liveness is judged against the caller's `now`, like the
 * other stores; Redis also drops each record a minute after its expiry.
 */
export class RedisOAuthStore implements OAuthStore {
  private readonly take_: (...args: (string | number)[]) => Promise<string | null>;

  constructor(private readonly link: RedisLink) {
    link.client.defineCommand('tgOAuthTake', { lua: TAKE, numberOfKeys: 1 });
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
    let cursor = '0';
    const pattern = `${this.key(prefix).replace(/[*?[\]\\]/g, '\\$&')}*`;
    do {
      const [next, keys] = await this.link.client.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      const expiries = await Promise.all(keys.map((k) => this.link.client.hget(k, 'e')));
      n += expiries.filter((e) => e !== null && Number(e) > now).length;
    } while (cursor !== '0');
    return n;
  }
}
