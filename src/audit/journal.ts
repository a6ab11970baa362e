import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { sha256 } from '../policy/load.js';
import { closeDatabase, openDatabase } from '../state/sqlite.js';
import { ChainWriter, type JournalEntry, type Outcome } from './chain.js';

/**
 * Audit journals: one file per batch, named `<db hash>.journal-<pid>-<nonce>-<seq>`. The first line
 * names the database (`{"db": path}`), then come rows (JSON arrays) and outcomes
 * (`{"o": eventId, "r": outcome, "l": latency}`). A batch's file is removed once the batch is in
 * the database; files of a process that died are replayed by whichever toolgate starts next.
 */

/** A journal reaching this size is written to the database at once (a new one starts). */
export const JOURNAL_MAX_BYTES = 1024 * 1024;
/** Journals of dead processes whose database is gone are kept this long, then removed. */
export const ORPHAN_KEEP_MS = 24 * 3600_000;

/** The private /dev/shm folder where journals live when there is one (memory, outlives kill -9). */
export function sharedJournalDir(): string | null {
  const shm = join('/dev/shm', `toolgate-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(shm, { recursive: true, mode: 0o700 });
    accessSync(shm, constants.W_OK);
    return shm;
  } catch {
    return null;
  }
}

/** Where a database's journals are written (the first) and searched: /dev/shm, then its own folder. */
export function journalDirs(file: string): string[] {
  const shm = sharedJournalDir();
  const own = dirname(resolve(file));
  return shm ? [shm, own] : [own];
}

export function journalPrefix(file: string): string {
  return `${sha256(resolve(file)).slice(0, 16)}.journal-`;
}

export function journalHeader(file: string): string {
  return JSON.stringify({ db: resolve(file) }) + '\n';
}

export function outcomeLine(o: Outcome): string {
  return `{"o":${JSON.stringify(o.eventId)},"r":${JSON.stringify(o.outcome)},"l":${o.latency === null ? 'null' : String(o.latency)}}\n`;
}

/**
 * Journal lines of a process's events, each the JSON of its entry, made with less work: the part
 * a session repeats on every call (instance, kind, server, grant, session, client) is serialised
 * once and reused while it stays the same, the event id and timestamp (this process's own, with
 * nothing to escape) are written as they are, and the timestamp's text up to the second is made
 * once per second.
 */
export class JournalLines {
  private same: readonly (string | null)[] = [];
  private sameText = '';
  private second = NaN;
  private secondText = '';

  /** `new Date(ms).toISOString()`, the part up to the second made once per second. */
  timestamp(ms: number): string {
    const second = ms - (ms % 1000);
    if (second !== this.second) {
      this.second = second;
      this.secondText = new Date(second).toISOString().slice(0, 20);
    }
    const milli = ms - second;
    return `${this.secondText}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
  }

  /** `JSON.stringify(entry)` and a newline, for an entry whose id and timestamp are this process's. */
  line(entry: JournalEntry): string {
    const same = this.same;
    if (entry[2] !== same[0] || entry[3] !== same[1] || entry[4] !== same[2] || entry[5] !== same[3] || entry[6] !== same[4] || entry[7] !== same[5]) {
      this.same = entry.slice(2, 8);
      this.sameText = JSON.stringify(this.same).slice(1, -1);
    }
    return `["${entry[0]}","${entry[1]}",${this.sameText},${JSON.stringify(entry.slice(8)).slice(1)}\n`;
  }
}

/** Whether a process of this machine is still running. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface DeadJournal { path: string; prefix: string; order: [number, string, number] }

function parse(path: string): { db?: string; entries: JournalEntry[]; outcomes: Outcome[] } {
  const out: { db?: string; entries: JournalEntry[]; outcomes: Outcome[] } = { entries: [], outcomes: [] };
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    let v: unknown;
    try { v = line ? JSON.parse(line) : undefined; } catch { continue; /* a write cut short by the crash */ }
    if (Array.isArray(v)) out.entries.push(v as JournalEntry);
    else if (v && typeof v === 'object') {
      const o = v as { db?: unknown; o?: unknown; r?: unknown; l?: unknown };
      if (typeof o.db === 'string') out.db = o.db;
      else if (typeof o.o === 'string' && typeof o.r === 'string') out.outcomes.push({ eventId: o.o, outcome: o.r, latency: typeof o.l === 'number' ? o.l : null });
    }
  }
  return out;
}

function remove(path: string): void {
  try { unlinkSync(path); } catch { /* another toolgate collected it first */ }
}

/** Journals of processes that are no longer running, grouped by database, oldest first. */
function deadJournals(dirs: readonly string[]): Map<string, DeadJournal[]> {
  const found: DeadJournal[] = [];
  for (const dir of new Set(dirs)) {
    let names: string[];
    try { names = readdirSync(dir); } catch { continue; }
    for (const name of names) {
      const m = /^([0-9a-f]{16}\.journal-)(\d+)-([0-9a-z]+)-(\d+)$/.exec(name);
      if (!m || alive(Number(m[2]))) continue;
      found.push({ path: join(dir, name), prefix: m[1], order: [Number(m[2]), m[3], Number(m[4])] });
    }
  }
  found.sort((a, b) => a.order[0] - b.order[0] || a.order[1].localeCompare(b.order[1]) || a.order[2] - b.order[2]);
  const groups = new Map<string, DeadJournal[]>();
  for (const j of found) groups.set(j.prefix, [...(groups.get(j.prefix) ?? []), j]);
  return groups;
}

/**
 * Collects the journals of processes that died: replays them into their database (through `own`
 * for the caller's own log, else by opening the database the journal names, when it exists), or,
 * when the database is gone or cannot take them, removes them once they are a day old. Run by
 * every toolgate that starts and by every audit log that opens.
 */
export function collectJournals(dirs: readonly string[], own?: { prefix: string; writer: ChainWriter }, now = Date.now()): void {
  for (const [prefix, journals] of deadJournals(dirs)) {
    let writer = prefix === own?.prefix ? own.writer : undefined;
    let close = () => {};
    try {
      if (!writer) {
        const db = journals.map((j) => { try { return parse(j.path).db; } catch { return undefined; } }).find((d) => d !== undefined);
        if (db !== undefined && journalPrefix(db) === prefix && existsSync(db)) {
          const handle = openDatabase(db);
          close = () => closeDatabase(handle);
          writer = new ChainWriter(handle);
        }
      }
      for (const j of journals) {
        if (writer) {
          const { entries, outcomes } = parse(j.path);
          writer.write({ entries, args: [], storeArgValues: [], awaiting: [], outcomes, journal: j.path });
        } else {
          const st = statSync(j.path);
          if (st.size === 0 || now - st.mtimeMs > ORPHAN_KEEP_MS) remove(j.path);
        }
      }
    } catch {
      // The database cannot take them now: they are tried again next time, and expire after a day.
      for (const j of journals) { try { if (now - statSync(j.path).mtimeMs > ORPHAN_KEEP_MS) remove(j.path); } catch { /* gone */ } }
    } finally {
      close();
    }
  }
}
