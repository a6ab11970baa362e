import { byTime } from './flow-touches.js';
import type { RedisLink } from './redis.js';
import type { FlowStore, FlowTouch } from './types.js';

/**
 * On Redis, shared by the fleet: one hash per agent (`<prefix>:flows:<agent>`), a field per role,
 * server and tool holding the latest touch and its expiry; the hash itself expires with its
 * longest-lived touch, so an idle agent leaves nothing behind.
 */
export class RedisFlowStore implements FlowStore {
  constructor(private readonly link: RedisLink) {}

  async touch(agent: string, touches: readonly FlowTouch[], expiresAt: number): Promise<void> {
    if (touches.length === 0) return;
    try {
      await this.link.ready();
      const key = this.link.key('flows', agent);
      const multi = this.link.client.multi();
      for (const t of touches) multi.hset(key, JSON.stringify([t.role, t.server, t.tool]), JSON.stringify({ at: t.at, expiresAt }));
      // Never shortens the hash's life (GT): a touch with a shorter window does not drop longer-lived ones.
      multi.pexpireat(key, expiresAt, 'GT');
      multi.pexpireat(key, expiresAt, 'NX');
      await multi.exec();
    } catch (err) {
      return this.link.failure(err as Error);
    }
  }

  async touched(agent: string, now: number): Promise<FlowTouch[]> {
    try {
      await this.link.ready();
      const all = await this.link.client.hgetall(this.link.key('flows', agent));
      const out: FlowTouch[] = [];
      for (const [field, value] of Object.entries(all)) {
        const [role, server, tool] = JSON.parse(field) as string[];
        const v = JSON.parse(value) as { at: number; expiresAt: number };
        if (v.expiresAt > now) out.push({ role, server, tool, at: v.at });
      }
      return out.sort(byTime);
    } catch (err) {
      return this.link.failure(err as Error);
    }
  }
}
