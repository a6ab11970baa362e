import type { RedisLink } from './redis.js';
import { Mirror } from './redis-mirror.js';
import type { FlagStore, KillScope, KillSwitchState } from './types.js';

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
    await this.link.replicated(`the kill switch (${scope === '*' ? 'every server' : scope}: ${on ? 'on' : 'off'})`);
  }

  async listKillSwitches(): Promise<KillSwitchState[]> {
    return [...(await this.mirror.refresh()).values()].sort((a, b) => (a.scope < b.scope ? -1 : 1));
  }
}

function killedIn(all: Map<string, KillSwitchState>, server: string): KillScope | null {
  if (all.get('*')?.on) return '*';
  return all.get(server)?.on ? server : null;
}
