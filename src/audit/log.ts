import { randomUUID } from 'node:crypto';
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { closeDatabase, openDatabase } from '../state/sqlite.js';
import { ChainWriter, type Batch, type JournalEntry, type Outcome } from './chain.js';
import { createAuditDatabase } from './database.js';
import { ThreadWriter } from './thread-writer.js';
import { verifyChain, type VerifyResult } from './verify.js';
import { queryRows, serverNames, summarize, trafficBuckets, type AuditQuery, type AuditSummary, type TrafficBucket } from './queries.js';
import { collectJournals, JOURNAL_MAX_BYTES, journalDirs, journalHeader, JournalLines, journalPrefix, outcomeLine } from './journal.js';

export type { AuditQuery, AuditSummary, TrafficBucket } from './queries.js';

export type AuditDecision = 'allow' | 'deny' | 'shadow_deny' | 'approval_requested' | 'approved' | 'rejected' | 'timeout' | 'unused' | 'error';
export type AuditKind = 'call' | 'approval' | 'policy_reload' | 'kill_switch' | 'start' | 'stop' | 'auth' | 'grant' | 'pin' | 'state' | 'prune' | 'poison';

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

/** An event as it is appended, for live views: the row's fields that exist before it is stored (argument keys, never values). */
export type LiveAuditEvent = Pick<AuditRow, 'ts' | 'instance' | 'kind' | 'server' | 'grant_label' | 'session' | 'client' | 'tool' | 'decision' | 'rule' | 'message' | 'arg_keys'>;

/** An event waiting for the next batch, with the arguments it still has to hash. */
interface PendingRow { entry: JournalEntry; args?: Record<string, unknown>; storeArgValues?: boolean; awaitsOutcome?: boolean }

/** Text fields longer than this (a hostile tool or client name) are cut in the row, so no one event can fill the journal. */
const FIELD_MAX = 4096;
const cut = (s: string | undefined): string | null =>
  s === undefined ? null : s.length <= FIELD_MAX ? s : `${s.slice(0, FIELD_MAX)}… [${s.length - FIELD_MAX} more characters]`;

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

  constructor(readonly file: string, private readonly opts: AuditLogOptions = {}) {
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

  /**
   * Hands what was appended to the writer now, without waiting for a background writer: for a
   * row that another process on the same file may soon look for (holds), e.g. a call whose retry
   * may reach another process.
   */
  hurry(): void {
    this.sendReporting();
  }

  /** Writes everything appended so far to the database before returning. */
  flush(): void {
    this.send();
    this.thread?.drain();
  }

  /**
   * Whether this log holds (or will hold) the event: this process appended it, or another process
   * on the same file stored it. A call continued at another instance of a fleet (its own audit
   * file) is not here: that instance writes a row of its own for it.
   */
  holds(eventId: string): boolean {
    if (eventId.startsWith(this.idPrefix)) return true;
    return this.db.prepare<[string], { one: number }>('SELECT 1 AS one FROM audit WHERE event_id = ?').get(eventId) !== undefined;
  }

  query(q: AuditQuery = {}): AuditRow[] {
    this.flush();
    return queryRows(this.db, q);
  }

  /** For `toolgate status`: who is running, how busy, what gets denied. */
  summary(now = Date.now()): AuditSummary {
    this.flush();
    return summarize(this.db, now);
  }

  /** Calls, denials and held calls per bucket since `sinceMs` ago, oldest first (empty buckets included). */
  traffic(sinceMs: number, bucketMs: number, server?: string, now = Date.now()): TrafficBucket[] {
    this.flush();
    return trafficBuckets(this.db, sinceMs, bucketMs, server, now);
  }

  /** Every server named in the last 30 days. */
  servers(now = Date.now()): string[] {
    this.flush();
    return serverNames(this.db, now);
  }

  /** The file's connection, for retention and export (which work on the stored rows). */
  get database(): Database.Database {
    this.flush();
    return this.db;
  }

  verify(): VerifyResult {
    this.flush();
    return verifyChain(this.db);
  }

  close(): void {
    if (!this.db.open) return;
    this.flush();
    this.thread?.close();
    closeDatabase(this.db);
  }
}
