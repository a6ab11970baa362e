import type Database from 'better-sqlite3';
import type { FlowStore, FlowTouch } from './types.js';

const keyOf = (t: FlowTouch) => `${t.role}\u0000${t.server}\u0000${t.tool}`;
/** Oldest first; ties by role, server, tool (every store answers in the same order). */
export const byTime = (a: FlowTouch, b: FlowTouch) => a.at - b.at || (a.role < b.role ? -1 : a.role > b.role ? 1 : 0) || (a.server < b.server ? -1 : a.server > b.server ? 1 : 0) || (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0);
/** How often expired touches are dropped (at most). */
const PURGE_EVERY_MS = 60_000;

/** In this process only (memory state serves one process). */
export class MemoryFlowStore implements FlowStore {
  private readonly agents = new Map<string, Map<string, { touch: FlowTouch; expiresAt: number }>>();
  private purgeAt = 0;

  touch(agent: string, touches: readonly FlowTouch[], expiresAt: number): void {
    let mine = this.agents.get(agent);
    if (!mine) this.agents.set(agent, (mine = new Map()));
    for (const t of touches) mine.set(keyOf(t), { touch: { ...t }, expiresAt });
  }

  touched(agent: string, now: number): FlowTouch[] {
    if (now >= this.purgeAt) {
      this.purgeAt = now + PURGE_EVERY_MS;
      for (const [a, mine] of this.agents) {
        for (const [k, v] of mine) if (v.expiresAt <= now) mine.delete(k);
        if (mine.size === 0) this.agents.delete(a);
      }
    }
    return [...(this.agents.get(agent)?.values() ?? [])].filter((v) => v.expiresAt > now).map((v) => ({ ...v.touch })).sort(byTime);
  }
}

/** In the state database: one row per agent, role, server and tool (the latest touch), shared by every process on the file. */
export class SqliteFlowStore implements FlowStore {
  private readonly upsert: Database.Statement<[string, string, string, string, number, number]>;
  private readonly select: Database.Statement<[string, number], FlowTouch>;
  private readonly purge: Database.Statement<[number]>;
  private purgeAt = 0;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS flow_touches (agent TEXT NOT NULL, role TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
      at INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (agent, role, server, tool)) WITHOUT ROWID`);
    this.upsert = db.prepare(`INSERT INTO flow_touches (agent, role, server, tool, at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (agent, role, server, tool) DO UPDATE SET at = MAX(at, excluded.at), expires_at = MAX(expires_at, excluded.expires_at)`);
    this.select = db.prepare('SELECT role, tool, server, at FROM flow_touches WHERE agent = ? AND expires_at > ? ORDER BY at, role, server, tool');
    this.purge = db.prepare('DELETE FROM flow_touches WHERE expires_at <= ?');
  }

  touch(agent: string, touches: readonly FlowTouch[], expiresAt: number): void {
    this.db.transaction(() => { for (const t of touches) this.upsert.run(agent, t.role, t.server, t.tool, t.at, expiresAt); })();
  }

  touched(agent: string, now: number): FlowTouch[] {
    if (now >= this.purgeAt) {
      this.purgeAt = now + PURGE_EVERY_MS;
      this.purge.run(now);
    }
    return this.select.all(agent, now);
  }
}
