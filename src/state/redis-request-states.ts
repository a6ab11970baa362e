import type { RedisLink } from './redis.js';
import { newSigningKey } from './request-states.js';
import type { RequestStateStore } from './types.js';

/**
 * How long an instance keeps the key it read. Re-read now and then so that instances converge on
 * one key again after Redis lost it (a flush): the first to write it afterwards (SET NX) wins.
 */
const KEY_CACHE_MS = 5_000;

/**
 * On Redis, shared by the fleet: the key under `<prefix>:secret:request-state` (SET NX: the first
 * instance to write it wins, every other reads it), each spent nonce as its own key, SET NX with
 * its expiry, so one state is used once across every instance.
 */
export class RedisRequestStateStore implements RequestStateStore {
  private cached?: { key: string; at: number };

  constructor(private readonly link: RedisLink, private readonly clock: () => number = Date.now) {}

  async signingKey(): Promise<string> {
    const now = this.clock();
    if (this.cached && now - this.cached.at < KEY_CACHE_MS) return this.cached.key;
    const name = this.link.key('secret', 'request-state');
    try {
      await this.link.ready();
      await this.link.client.set(name, newSigningKey(), 'NX');
      const key = await this.link.client.get(name);
      if (!key) throw new Error('the request-state key vanished right after it was written');
      this.cached = { key, at: now };
      return key;
    } catch (err) {
      return this.link.failure(err as Error);
    }
  }

  async spend(nonce: string, expiresAt: number, now: number): Promise<boolean> {
    try {
      await this.link.ready();
      const ttl = Math.max(1, expiresAt - now);
      return (await this.link.client.set(this.link.key('spent-state', nonce), '1', 'PX', ttl, 'NX')) === 'OK';
    } catch (err) {
      return this.link.failure(err as Error);
    }
  }
}
