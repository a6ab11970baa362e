import type { RedisLink } from './redis.js';
import type { FleetInstance, FleetView } from './types.js';

/** How long an instance counts as live after it last announced itself. */
const LIVE_MS = 15_000;
/** The audit stream keeps about this many events (MAXLEN ~). */
const STREAM_MAX = 100_000;

/** Instances in a sorted set (score: last announcement), their details in expiring keys; audit events in a capped stream. */
export class RedisFleet implements FleetView {
  private readonly members: string;
  private readonly stream: string;

  constructor(private readonly link: RedisLink) {
    this.members = link.key('instances');
    this.stream = link.key('audit');
  }

  async announce(i: Omit<FleetInstance, 'lastSeen' | 'generation'>): Promise<void> {
    const now = Date.now();
    const generation = this.link.generation.describe();
    const info: FleetInstance = { ...i, lastSeen: new Date(now).toISOString(), ...(generation ? { generation } : {}) };
    await this.link.client.multi()
      .zadd(this.members, now, i.instance)
      .set(this.link.key('instance', i.instance), JSON.stringify(info), 'PX', LIVE_MS)
      .zremrangebyscore(this.members, '-inf', now - LIVE_MS)
      .exec();
  }

  async instances(): Promise<FleetInstance[]> {
    const names = await this.link.client.zrangebyscore(this.members, Date.now() - LIVE_MS, '+inf');
    if (names.length === 0) return [];
    const details = await this.link.client.mget(names.map((n) => this.link.key('instance', n)));
    return details.filter((d): d is string => d !== null).map((d) => JSON.parse(d) as FleetInstance);
  }

  publish(event: Record<string, unknown>): void {
    if (this.link.client.status !== 'ready') return;
    this.link.client.xadd(this.stream, 'MAXLEN', '~', STREAM_MAX, '*', 'e', JSON.stringify(event)).catch(() => {});
  }

  follow(onEvent: (event: Record<string, unknown>) => void): () => void {
    // XREAD BLOCK holds its connection, so following has one of its own.
    const reader = this.link.duplicate();
    reader.on('error', () => {});
    let stopped = false;
    let last = '$';
    void (async () => {
      while (!stopped) {
        try {
          const got = await reader.xread('BLOCK', 5000, 'STREAMS', this.stream, last);
          for (const [, entries] of got ?? []) {
            for (const [id, fields] of entries) {
              last = id;
              const json = fields[fields.indexOf('e') + 1];
              try { onEvent(JSON.parse(json) as Record<string, unknown>); } catch { /* not ours */ }
            }
          }
        } catch {
          if (!stopped) await new Promise((r) => setTimeout(r, 500));
        }
      }
    })();
    return () => {
      stopped = true;
      reader.disconnect();
    };
  }
}
