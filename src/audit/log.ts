import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { closeDatabase, openDatabase } from '../state/sqlite.js';
import { ChainWriter, GENESIS, outcomeHash, rowHash, type Batch, type JournalEntry, type Outcome } from './chain.js';
import { alive, collectJournals, JOURNAL_MAX_BYTES, journalDirs, journalHeader, JournalLines, journalPrefix, outcomeLine } from './journal.js';

export type AuditDecision = 'allow' | 'deny' | 'shadow_deny' | 'approval_requested' | 'approved' | 'rejected' | 'timeout' | 'unused' | 'error';
export type AuditKind = 'call' | 'approval' | 'policy_reload' | 'kill_switch' | 'start' | 'stop' | 'auth' | 'grant' | 'pin';

export interface AuditEvent {
  kind: AuditKind;
  server?: string;
  grant?: string;
  session?: string;
  client?: string;
  tool?: string;
  decision?: AuditDecision;
  rule?: string;
  message?: string;
  /**
   * The call's arguments. The row stores their top-level keys and a SHA-256 of their canonical
   * JSON; the values themselves only with `storeArgValues` (secrets masked).
   */
  args?: Record<string, unknown>;
  storeArgValues?: boolean;
  policyHash?: string;
  /** The call is forwarded: its outcome follows with `finish`. */
  awaitsOutcome?: boolean;
}

/** Names an appended event, to attach its upstream outcome later. */
export interface AuditRef {
  eventId: string;
}

export interface AuditRow {
  id: number;
  event_id: string;
  ts: string;
  instance: string;
  kind: AuditKind;
  server: string | null;
  grant_label: string | null;
  session: string | null;
  client: string | null;
  tool: string | null;
  decision: AuditDecision | null;
  rule: string | null;
  message: string | null;
  arg_keys: string | null;
  args_sha256: string | null;
  args: string | null;
  policy_hash: string | null;
  prev_hash: string;
  hash: string;
  outcome: string | null;
  latency_ms: number | null;
  outcome_hash: string | null;
}

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

/** An event as it is appended, for live views: the row's fields that exist before it is stored (argument keys, never values). */
export type LiveAuditEvent = Pick<AuditRow, 'ts' | 'instance' | 'kind' | 'server' | 'grant_label' | 'session' | 'client' | 'tool' | 'decision' | 'rule' | 'message' | 'arg_keys'>;

/** Calls per time bucket, for charts. `held` counts calls that waited for a human. */
export interface TrafficBucket { t: string; calls: number; denied: number; held: number }

export interface VerifyResult {
  ok: boolean;
  rows: number;
  problem?: string;
  badId?: number;
}

/** An event waiting for the next batch, with the arguments it still has to hash. */
interface PendingRow { entry: JournalEntry; args?: Record<string, unknown>; storeArgValues?: boolean; awaitsOutcome?: boolean }

/** Text fields longer than this (a hostile tool or client name) are cut in the row, so no one event can fill the journal. */
const FIELD_MAX = 4096;
const cut = (s: string | undefined): string | null =>
  s === undefined ? null : s.length <= FIELD_MAX ? s : `${s.slice(0, FIELD_MAX)}… [${s.length - FIELD_MAX} more characters]`;

/**
 * A new audit database gets 4 KiB pages: its rows are written in batches, and bigger pages halve a
 * batch's cost (fewer WAL frames to write; 17 against 35 µs of CPU per row). openDatabase's 1 KiB
 * pages suit the state store, which writes one small row at a time. The page size is fixed once
 * the file exists, so this only happens before openDatabase first creates it.
 */
function createAuditDatabase(file: string): void {
  if (file === ':memory:' || existsSync(file)) return;
  try {
    mkdirSync(dirname(file), { recursive: true });
    const db = new Database(file);
    try {
      db.pragma('page_size = 4096');
      db.pragma('journal_mode = WAL');
    } finally {
      db.close();
    }
  } catch {
    // openDatabase, next, says what is wrong with the file.
  }
}

const FLUSH_EVERY_MS = 50;
/** Outcome lines held for the next journal write at most (characters). */
const UNWRITTEN_MAX = 16 * 1024;
const FLUSH_AT = 256;

/**
 * The audit log: one SQLite row per decision, hash-chained, so `verify` finds an edited or
 * deleted row.
 *
 * Durability without a database commit on the hot path: an event is first appended, with one
 * write, to this process's journal (in /dev/shm where there is one, else beside the database) —
 * that is done before the call is forwarded, and a write that returned survives kill -9 — then
 * rows are inserted in batches (one transaction every 50 ms; each batch has its own journal file,
 * removed once the batch is stored), on this thread or, with `background`, in a worker thread.
 * Opening the log replays the journals of processes that died before their last batch. Like
 * SQLite's own WAL in NORMAL mode, this protects against the process dying, not against the
 * machine losing power. The upstream outcome is sealed with its own hash, since it comes later.
 */
export interface AuditLogOptions {
  /** Hash and insert batches in a worker thread (toolgate serve), not on the event loop. */
  background?: boolean;
  /** Told when a batch could not be written (its journal stays, for the next process to replay). */
  onError?: (message: string) => void;
  /** Also told of every event (as its row's columns) and outcome: a fleet's shared stream. */
  onEvent?: (event: Record<string, unknown>) => void;
}

/**
 * Writes batches in a worker thread; `drain` waits until every batch sent is done. A thread that
 * dies is reported and not used again; the journals of batches it had not written stay on disk
 * and are replayed by the next process that opens the log after this one ends.
 */
class ThreadWriter {
  alive = true;
  private readonly worker: Worker;
  private readonly done = new Int32Array(new SharedArrayBuffer(4));
  private sent = 0;

  constructor(file: string, onError: (message: string) => void) {
    const workerData = { file, done: this.done.buffer };
    // Run from TypeScript sources (the tests, under tsx), the thread registers tsx itself first.
    this.worker = import.meta.url.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(new URL('./writer-thread.ts', import.meta.url).href)}); });`, { eval: true, workerData })
      : new Worker(new URL('./writer-thread.js', import.meta.url), { workerData });
    this.worker.on('message', (m: { error?: string }) => { if (m.error) onError(m.error); });
    this.worker.on('error', (err) => { this.alive = false; onError(err.message); });
    this.worker.on('exit', () => { this.alive = false; });
    this.worker.unref();
  }

  write(batch: Batch): void {
    this.sent++;
    this.worker.postMessage(batch);
  }

  drain(): void {
    for (let done = Atomics.load(this.done, 0); done < this.sent && this.alive; done = Atomics.load(this.done, 0)) {
      Atomics.wait(this.done, 0, done, 100);
    }
  }

  close(): void {
    this.drain();
    this.worker.postMessage('close');
  }
}

export class AuditLog {
  readonly instance = `${hostname()}:${process.pid}`;
  private readonly db: Database.Database;
  /** Writes batches on this thread: recovery, `toolgate run`, and everything without `background`. */
  private readonly inline: ChainWriter;
  private thread?: ThreadWriter;
  private readonly journalDir: string;
  private readonly journalPrefix: string;
  private readonly header: string;
  private journal: { path: string; fd: number; bytes: number } | null = null;
  private readonly lines = new JournalLines();
  private journalSeq = 0;
  private pending: PendingRow[] = [];
  private readonly nonce = randomUUID().slice(0, 8);
  private readonly idPrefix = `${process.pid.toString(36)}-${this.nonce}-`;
  private seq = 0;
  private outcomes: Outcome[] = [];
  /** Journal lines of outcomes recorded in this turn, still to be written (see finish). */
  private unwritten = '';
  private turnEnd: NodeJS.Immediate | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(e: LiveAuditEvent) => void>();

  constructor(private readonly file: string, private readonly opts: AuditLogOptions = {}) {
    createAuditDatabase(file);
    this.db = openDatabase(file);
    this.inline = new ChainWriter(this.db);
    this.journalPrefix = journalPrefix(file);
    this.header = journalHeader(file);
    const dirs = journalDirs(file);
    this.journalDir = dirs[0];
    // The journals of processes that died: this log's are replayed here, others' into their own database.
    collectJournals(dirs, { prefix: this.journalPrefix, writer: this.inline });
  }

  append(e: AuditEvent): AuditRef {
    const eventId = this.idPrefix + (this.seq++).toString(36);
    const keys = e.args ? JSON.stringify(Object.keys(e.args)) : null;
    const entry: JournalEntry = [
      eventId, this.lines.timestamp(Date.now()), this.instance, e.kind, cut(e.server), cut(e.grant), cut(e.session),
      cut(e.client), cut(e.tool), e.decision ?? null, cut(e.rule), cut(e.message),
      keys !== null && keys.length > FIELD_MAX ? cut(keys) : keys, e.policyHash ?? null,
    ];
    // The journal line is what survives kill -9: the call, its tool, decision and argument keys.
    // Hashing the arguments waits for the batch, off the path of the call.
    // Outcome lines of this turn go first, in the same write.
    const lines = this.unwritten + this.lines.line(entry);
    this.unwritten = '';
    this.journalWrite(lines);
    this.pending.push({ entry, args: e.args, storeArgValues: e.storeArgValues, awaitsOutcome: e.awaitsOutcome });
    this.scheduleOrRotate();
    if (this.listeners.size > 0) this.tell(entry, e);
    this.opts.onEvent?.({
      event_id: eventId, ts: entry[1], instance: this.instance, kind: e.kind, server: entry[4], grant_label: entry[5], session: entry[6],
      client: entry[7], tool: entry[8], decision: entry[9], rule: entry[10], message: entry[11], arg_keys: entry[12],
    });
    return { eventId };
  }

  /** Hears every event this process appends from now on; returns the way to stop. */
  subscribe(listener: (e: LiveAuditEvent) => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  private tell(entry: JournalEntry, e: AuditEvent): void {
    const live: LiveAuditEvent = {
      ts: entry[1]!, instance: this.instance, kind: e.kind, server: e.server ?? null, grant_label: e.grant ?? null, session: e.session ?? null,
      client: e.client ?? null, tool: e.tool ?? null, decision: e.decision ?? null, rule: e.rule ?? null, message: e.message ?? null, arg_keys: entry[12],
    };
    for (const listener of this.listeners) {
      try { listener(live); } catch { /* a listener's failure is its own */ }
    }
  }

  /**
   * Records the upstream outcome of a forwarded call (result, is_error, error, cancelled,
   * unanswered, unreachable, timeout). Its journal line rides with the next journal write (the
   * next call's line, this batch's end) or goes at the end of this turn of the event loop, so a
   * call costs one journal write on its path and the answer does not wait for a second: a kill -9
   * between the answer and the end of its turn leaves the row without its outcome, like a call
   * still in flight, never without the row.
   */
  finish(ref: AuditRef, outcome: string, latencyMs: number | null): void {
    const o: Outcome = { eventId: ref.eventId, outcome, latency: latencyMs === null ? null : Math.round(latencyMs * 1000) / 1000 };
    this.outcomes.push(o);
    this.unwritten += outcomeLine(o);
    // A burst of answers in one turn (a closing upstream, many in one read) is written as it grows,
    // so that it can neither hold much memory nor carry a journal far past its size.
    if (this.unwritten.length >= UNWRITTEN_MAX) this.writeUnwritten();
    else this.turnEnd ??= setImmediate(this.endOfTurn);
    this.scheduleOrRotate();
    this.opts.onEvent?.({ event_id: ref.eventId, ts: new Date().toISOString(), instance: this.instance, kind: 'outcome', outcome, latency_ms: o.latency });
  }

  private readonly endOfTurn = (): void => {
    this.writeUnwritten();
    this.scheduleOrRotate();
  };

  /** Outcome lines not yet in the journal go now; a failure is reported, as the outcomes still reach the database with their batch. */
  private writeUnwritten(): void {
    clearImmediate(this.turnEnd);
    this.turnEnd = undefined;
    if (this.unwritten === '') return;
    const lines = this.unwritten;
    this.unwritten = '';
    try {
      this.journalWrite(lines);
    } catch (err) {
      this.opts.onError?.(`audit journal: ${(err as Error).message}`);
    }
  }

  /**
   * Each batch has its own journal file, removed once the batch is stored. A write the disk cuts
   * short (EFBIG, ENOSPC) throws, so the call it records is refused; the cut line ends its journal,
   * whose batch is stored at once, so no later line is read as part of it.
   */
  private journalWrite(line: string): void {
    let wanted = Buffer.byteLength(line);
    let wrote: number;
    if (this.journal) {
      wrote = writeSync(this.journal.fd, line);
      this.journal.bytes += wrote;
    } else {
      wanted += Buffer.byteLength(this.header);
      this.journal = this.openJournal(line);
      wrote = this.journal.bytes;
    }
    if (wrote < wanted) {
      this.sendReporting();
      // Nothing was pending, so no batch took the journal: it holds its header and the cut line only.
      if (this.journal) this.dropJournal();
      throw new Error(`the journal took ${wrote} of ${wanted} bytes (is the disk full?)`);
    }
  }

  private dropJournal(): void {
    const { fd, path } = this.journal!;
    this.journal = null;
    try { closeSync(fd); } catch { /* already unusable */ }
    try { unlinkSync(path); } catch { /* gone */ }
  }

  /** A full journal's batch is stored at once (so a journal stays small); else on the timer. */
  private scheduleOrRotate(): void {
    if (this.journal && this.journal.bytes >= JOURNAL_MAX_BYTES) this.sendReporting();
    else this.schedule();
  }

  /** How many outcomes the writer on this thread waits for (a test hook: it must stay bounded). */
  get awaitingOutcomes(): number {
    return this.inline.awaitingOutcomes;
  }

  private schedule(): void {
    if (this.timer) return;
    const soon = this.pending.length + this.outcomes.length >= FLUSH_AT;
    this.timer = setTimeout(() => this.sendReporting(), soon ? 0 : FLUSH_EVERY_MS);
    this.timer.unref();
  }

  private sendReporting(): void {
    try {
      this.send();
    } catch (err) {
      // The batch's journal stays on disk, to be replayed; the process carries on.
      if (!this.opts.onError) throw err;
      this.opts.onError(`audit batch not written: ${(err as Error).message}`);
    }
  }

  /** A new journal starts with the name of its database, so any toolgate can replay it there; written with its first line, in one write. */
  private openJournal(line: string): { path: string; fd: number; bytes: number } {
    const path = join(this.journalDir, `${this.journalPrefix}${process.pid}-${this.nonce}-${this.journalSeq++}`);
    const fd = openSync(path, 'a', 0o600);
    return { path, fd, bytes: writeSync(fd, this.header + line) };
  }

  /** Hands pending rows and outcomes to the writer (a worker thread with `background`). */
  private send(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    // The batch's journal holds every outcome the batch stores.
    this.writeUnwritten();
    if (this.pending.length === 0 && this.outcomes.length === 0) return;
    const batch: Batch = {
      entries: this.pending.map((p) => p.entry),
      args: this.pending.map((p) => p.args),
      storeArgValues: this.pending.map((p) => p.storeArgValues === true),
      awaiting: this.pending.map((p) => p.awaitsOutcome === true),
      outcomes: this.outcomes,
    };
    if (this.journal) {
      closeSync(this.journal.fd);
      batch.journal = this.journal.path;
      this.journal = null;
    }
    this.pending = [];
    this.outcomes = [];
    if (this.opts.background && this.thread?.alive !== false) {
      this.thread ??= new ThreadWriter(this.file, (m) => this.opts.onError?.(`audit writer thread: ${m}`));
      this.thread.write(batch);
    } else {
      this.inline.write(batch);
    }
  }

  /** Writes everything appended so far to the database before returning. */
  flush(): void {
    this.send();
    this.thread?.drain();
  }

  query(q: AuditQuery = {}): AuditRow[] {
    this.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.sinceMs !== undefined) { where.push('ts >= ?'); params.push(new Date(Date.now() - q.sinceMs).toISOString()); }
    if (q.afterId !== undefined) { where.push('id > ?'); params.push(q.afterId); }
    const eq: [keyof AuditQuery, string][] = [['decision', 'decision'], ['tool', 'tool'], ['server', 'server'], ['grant', 'grant_label'], ['session', 'session'], ['client', 'client'], ['instance', 'instance'], ['kind', 'kind']];
    for (const [key, column] of eq) {
      if (q[key] !== undefined) { where.push(`${column} = ?`); params.push(q[key]); }
    }
    const sql = `SELECT * FROM audit ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, q.limit ?? 1000) as AuditRow[]).reverse();
  }

  /** For `toolgate status`: who is running, how busy, what gets denied. */
  summary(now = Date.now()): AuditSummary {
    this.flush();
    const iso = (ms: number) => new Date(now - ms).toISOString();
    const recent = new Map(this.db.prepare<[string], { instance: string; servers: string; last: string; calls: number }>(
      "SELECT instance, group_concat(DISTINCT server) AS servers, max(ts) AS last, sum(kind = 'call') AS calls FROM audit WHERE ts >= ? GROUP BY instance").all(iso(15 * 60_000)).map((r) => [r.instance, r]));
    const lifecycle = this.db.prepare<[], { instance: string; started: string; stopped: string | null }>(
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
    const perMinute = this.db.prepare<[string], { server: string | null; calls: number; denied: number }>(
      "SELECT server, count(*) AS calls, sum(decision = 'deny') AS denied FROM audit WHERE kind = 'call' AND ts >= ? GROUP BY server ORDER BY calls DESC").all(iso(60_000));
    const topDenials = this.db.prepare<[string], { server: string | null; tool: string | null; rule: string | null; count: number }>(
      "SELECT server, tool, rule, count(*) AS count FROM audit WHERE kind = 'call' AND decision = 'deny' AND ts >= ? GROUP BY server, tool, rule ORDER BY count DESC LIMIT 10").all(iso(3_600_000));
    return {
      instances,
      stopped,
      callsLastMinute: perMinute,
      topDenialsLastHour: topDenials,
    };
  }

  /** Calls, denials and held calls per bucket since `sinceMs` ago, oldest first (empty buckets included). */
  traffic(sinceMs: number, bucketMs: number, server?: string, now = Date.now()): TrafficBucket[] {
    this.flush();
    const start = Math.floor((now - sinceMs) / bucketMs) * bucketMs;
    const rows = this.db.prepare<unknown[], { ts: string; kind: string; decision: string | null }>(
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
  servers(now = Date.now()): string[] {
    this.flush();
    return this.db.prepare<[string], { server: string }>('SELECT DISTINCT server FROM audit WHERE ts >= ? AND server IS NOT NULL ORDER BY server')
      .all(new Date(now - 30 * 86_400_000).toISOString()).map((r) => r.server);
  }

  verify(): VerifyResult {
    this.flush();
    let prev = GENESIS;
    let rows = 0;
    let lastId = 0;
    for (const row of this.db.prepare('SELECT * FROM audit ORDER BY id').iterate() as IterableIterator<AuditRow>) {
      rows++;
      if (row.prev_hash !== prev) return { ok: false, rows, badId: row.id, problem: `row ${row.id} does not follow the row before it (a row was deleted or inserted)` };
      if (rowHash(prev, row as unknown as Record<string, unknown>) !== row.hash) return { ok: false, rows, badId: row.id, problem: `row ${row.id} was edited` };
      if (row.outcome !== null && row.outcome_hash !== outcomeHash(row.hash, row.outcome, row.latency_ms)) {
        return { ok: false, rows, badId: row.id, problem: `the outcome of row ${row.id} was edited` };
      }
      prev = row.hash;
      lastId = row.id;
    }
    const head = this.db.prepare<[], { id: number; hash: string }>('SELECT id, hash FROM audit_head WHERE one = 1').get();
    if (head && (head.id !== lastId || head.hash !== prev)) return { ok: false, rows, badId: head.id, problem: `rows after ${lastId} were deleted (the log's head is row ${head.id})` };
    return { ok: true, rows };
  }

  close(): void {
    if (!this.db.open) return;
    this.flush();
    this.thread?.close();
    closeDatabase(this.db);
  }
}
