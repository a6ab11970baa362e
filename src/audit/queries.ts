import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { alive } from './journal.js';
import type { AuditRow } from './log.js';

/*
 * Reading the audit log: rows by filter, and the shapes `toolgate status` and the dashboard's
 * charts read (who is running, calls per bucket, servers named). The callers flush first
 * (AuditLog's methods of the same names), so these see every event appended so far.
 */

export interface AuditQuery {
  sinceMs?: number;
  decision?: string;
  tool?: string;
  server?: string;
  grant?: string;
  session?: string;
  client?: string;
  instance?: string;
  kind?: string;
  /** Only rows stored after this row id (following the log). */
  afterId?: number;
  limit?: number;
}

export interface AuditSummary {
  /**
   * Serving processes (run, serve) still running: started, not stopped, and — on this host —
   * alive; with the servers they called and their calls in the last 15 minutes.
   */
  instances: { instance: string; started: string; servers: string[]; lastSeen: string | null; calls: number }[];
  /** Serving processes that ended in the last 15 minutes (stopped: null when they died without saying so). */
  stopped: { instance: string; started: string; stopped: string | null }[];
  callsLastMinute: { server: string | null; calls: number; denied: number }[];
  topDenialsLastHour: { server: string | null; tool: string | null; rule: string | null; count: number }[];
}

/** Calls per time bucket, for charts. `held` counts calls that waited for a human. */
export interface TrafficBucket { t: string; calls: number; denied: number; held: number }

/** The rows matching the query, oldest first (the newest `limit`, 1000 unless told). */
export function queryRows(db: Database.Database, q: AuditQuery = {}): AuditRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  if (q.sinceMs !== undefined) { where.push('ts >= ?'); params.push(new Date(Date.now() - q.sinceMs).toISOString()); }
  if (q.afterId !== undefined) { where.push('id > ?'); params.push(q.afterId); }
  const eq: [keyof AuditQuery, string][] = [['decision', 'decision'], ['tool', 'tool'], ['server', 'server'], ['grant', 'grant_label'], ['session', 'session'], ['client', 'client'], ['instance', 'instance'], ['kind', 'kind']];
  for (const [key, column] of eq) {
    if (q[key] !== undefined) { where.push(`${column} = ?`); params.push(q[key]); }
  }
  const sql = `SELECT * FROM audit ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
  return (db.prepare(sql).all(...params, q.limit ?? 1000) as AuditRow[]).reverse();
}

/** For `toolgate status`: who is running, how busy, what gets denied. */
export function summarize(db: Database.Database, now = Date.now()): AuditSummary {
  const iso = (ms: number) => new Date(now - ms).toISOString();
  const recent = new Map(db.prepare<[string], { instance: string; servers: string; last: string; calls: number }>(
    "SELECT instance, group_concat(DISTINCT server) AS servers, max(ts) AS last, sum(kind = 'call') AS calls FROM audit WHERE ts >= ? GROUP BY instance").all(iso(15 * 60_000)).map((r) => [r.instance, r]));
  const lifecycle = db.prepare<[], { instance: string; started: string; stopped: string | null }>(
    "SELECT instance, max(CASE WHEN kind = 'start' THEN ts END) AS started, max(CASE WHEN kind = 'stop' THEN ts END) AS stopped FROM audit WHERE kind IN ('start', 'stop') GROUP BY instance").all();
  const host = hostname();
  const instances: AuditSummary['instances'] = [];
  const stopped: AuditSummary['stopped'] = [];
  for (const l of lifecycle) {
    if (l.started === null) continue;
    const [on, pid] = [l.instance.slice(0, l.instance.lastIndexOf(':')), Number(l.instance.slice(l.instance.lastIndexOf(':') + 1))];
    const ended = (l.stopped !== null && l.stopped >= l.started) || (on === host && !alive(pid));
    const r = recent.get(l.instance);
    if (!ended) instances.push({ instance: l.instance, started: l.started, servers: (r?.servers ?? '').split(',').filter(Boolean), lastSeen: r?.last ?? null, calls: r?.calls ?? 0 });
    else if (r) stopped.push({ instance: l.instance, started: l.started, stopped: l.stopped !== null && l.stopped >= l.started ? l.stopped : null });
  }
  instances.sort((a, b) => ((b.lastSeen ?? b.started) > (a.lastSeen ?? a.started) ? 1 : -1));
  const perMinute = db.prepare<[string], { server: string | null; calls: number; denied: number }>(
    "SELECT server, count(*) AS calls, sum(decision = 'deny') AS denied FROM audit WHERE kind = 'call' AND ts >= ? GROUP BY server ORDER BY calls DESC").all(iso(60_000));
  const topDenials = db.prepare<[string], { server: string | null; tool: string | null; rule: string | null; count: number }>(
    "SELECT server, tool, rule, count(*) AS count FROM audit WHERE kind = 'call' AND decision = 'deny' AND ts >= ? GROUP BY server, tool, rule ORDER BY count DESC LIMIT 10").all(iso(3_600_000));
  return {
    instances,
    stopped,
    callsLastMinute: perMinute,
    topDenialsLastHour: topDenials,
  };
}

/** Calls, denials and held calls per bucket since `sinceMs` ago, oldest first (empty buckets included). */
export function trafficBuckets(db: Database.Database, sinceMs: number, bucketMs: number, server?: string, now = Date.now()): TrafficBucket[] {
  const start = Math.floor((now - sinceMs) / bucketMs) * bucketMs;
  const rows = db.prepare<unknown[], { ts: string; kind: string; decision: string | null }>(
    `SELECT ts, kind, decision FROM audit WHERE kind IN ('call', 'approval') AND ts >= ?${server === undefined ? '' : ' AND server = ?'}`,
  ).all(...[new Date(start).toISOString(), ...(server === undefined ? [] : [server])]);
  const buckets: TrafficBucket[] = [];
  for (let t = start; t <= now; t += bucketMs) buckets.push({ t: new Date(t).toISOString(), calls: 0, denied: 0, held: 0 });
  for (const row of rows) {
    const b = buckets[Math.floor((Date.parse(row.ts) - start) / bucketMs)];
    if (!b) continue;
    // A held call is one approval_requested row; its call row comes when it is decided.
    if (row.kind === 'approval') { if (row.decision === 'approval_requested') b.held++; continue; }
    b.calls++;
    if (row.decision === 'deny') b.denied++;
  }
  return buckets;
}

/** Every server named in the last 30 days. */
export function serverNames(db: Database.Database, now = Date.now()): string[] {
  return db.prepare<[string], { server: string }>('SELECT DISTINCT server FROM audit WHERE ts >= ? AND server IS NOT NULL ORDER BY server')
    .all(new Date(now - 30 * 86_400_000).toISOString()).map((r) => r.server);
}
