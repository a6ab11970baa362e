/**
 * Task ends seen by another instance of a fleet. A task's audit row is in the audit database of
 * the instance whose call created it, and only that instance can finish it; behind a round-robin
 * balancer the poll that sees the task end usually reaches another one. That instance leaves a
 * note in the shared state (TaskBook.noteEnd); the row's instance watches the tasks it created
 * and, when a note appears, claims the end (once, as when it sees the end itself) and finishes
 * the row. Process-wide: one timer for every session, running only while tasks are watched.
 *
 * Bounds: at most MAX_WATCHED tasks are watched (past that the oldest is dropped: its row keeps
 * `task_created` unless this instance sees the end itself, as before), each for at most a week;
 * an instance that restarts forgets what it watched.
 */
import type { TaskBook } from './records.js';
import { auditOutcome } from './shapes.js';

const SWEEP_MS = 2_000;
const MAX_WATCHED = 10_000;
const MAX_WATCH_MS = 7 * 24 * 60 * 60_000;

interface Watched {
  book: TaskBook;
  server: string;
  grant: string;
  taskId: string;
  /** When the call started: the row's latency counts from it. */
  started: number;
  until: number;
  /** Finishes the row with this outcome and latency. */
  finish(outcome: string, latencyMs: number): void;
}

export class TaskEndWatch {
  private readonly watched = new Map<string, Watched>();
  private timer?: NodeJS.Timeout;
  private sweeping = false;

  constructor(private readonly now: () => number = Date.now, private readonly everyMs = SWEEP_MS) {}

  private static key(server: string, grant: string, taskId: string): string {
    return JSON.stringify([server, grant, taskId]);
  }

  get size(): number {
    return this.watched.size;
  }

  watch(w: Omit<Watched, 'until'>): void {
    const key = TaskEndWatch.key(w.server, w.grant, w.taskId);
    this.watched.delete(key);
    this.watched.set(key, { ...w, until: this.now() + MAX_WATCH_MS });
    while (this.watched.size > MAX_WATCHED) this.watched.delete(this.watched.keys().next().value!);
    if (!this.timer && this.everyMs > 0) {
      this.timer = setInterval(() => void this.sweep(), this.everyMs);
      this.timer.unref();
    }
  }

  /** This instance recorded the end itself: nothing more to watch. */
  unwatch(server: string, grant: string, taskId: string): void {
    this.watched.delete(TaskEndWatch.key(server, grant, taskId));
    this.idle();
  }

  /** One look at every watched task's note (the timer's work; tests call it directly). */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      const now = this.now();
      for (const [key, w] of [...this.watched]) {
        if (now > w.until) {
          this.watched.delete(key);
          continue;
        }
        try {
          const note = await w.book.takeEndNote(w.server, w.grant, w.taskId);
          if (!note) continue;
          this.watched.delete(key);
          if (await w.book.claimEnd(w.server, w.grant, w.taskId)) w.finish(auditOutcome(note.status), Math.max(0, note.at - w.started));
        } catch {
          // The store is away: looked at again on the next sweep.
        }
      }
    } finally {
      this.sweeping = false;
      this.idle();
    }
  }

  private idle(): void {
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** The one watch of this process. */
export const taskEnds = new TaskEndWatch();
