/**
 * Who owns each task toolgate saw created, kept in the state store so that every instance of a
 * fleet (and every pooled upstream session of a grant) reads the same answer.
 *
 * A task is named by (server, grant, upstream task id): a lookup is always made under the asking
 * grant, so another grant's id — guessed, or seen in a log — finds nothing, exactly as an id that
 * never existed. The upstream's ids are shown to the client unchanged; two grants whose upstream
 * sessions both number their tasks "1" each find only their own. A record holds what later steps
 * need: the tool and its arguments (tasks/update is judged against them), the audit row to finish
 * when the task ends, and when the call started.
 *
 * The end of a task is claimed once (`claimEnd`, an atomic take), so the audit row gets one
 * outcome however many clients or instances see the task end. Only the toolgate writing the row's
 * audit database claims it: another instance of a fleet that sees the end leaves a note
 * (`noteEnd`) that the row's instance picks up (src/tasks/ends.ts).
 */
import type { Awaitable, OAuthStore } from '../state/types.js';
import type { TaskStatus } from './shapes.js';

export interface TaskRecord {
  tool: string;
  args: Record<string, unknown>;
  /** The call's audit row (eventId), when there is an audit log. */
  audit?: string;
  /** Which audit database holds that row (host and file): only a toolgate writing to it can end the row. */
  auditDb?: string;
  /** When the call was decided (ms since the epoch). */
  started: number;
  /** The rule that held the call until a person approved it, when one did. */
  approvedRule?: string;
}

/** What another instance saw of a task's end: its status, and when (ms since the epoch). */
export interface EndNote { status: TaskStatus; at: number }

/** A record as stored: how long it is kept after each use, and until when it is kept now. */
interface Kept extends TaskRecord { keepMs: number; keepUntil: number }

/** The expiring key-value records a task book is kept in (the state store's short-lived records). */
export type TaskStore = Pick<OAuthStore, 'put' | 'get' | 'take'>;

/** Records outlive their task's TTL by this much, and a task without one is kept this long. */
const GRACE_MS = 60 * 60_000;
const DEFAULT_KEEP_MS = 24 * 60 * 60_000;
const MAX_KEEP_MS = 7 * 24 * 60 * 60_000;

export class TaskBook {
  constructor(private readonly store: TaskStore, private readonly now: () => number = Date.now) {}

  private key(kind: 'task' | 'task-open' | 'task-end', server: string, grant: string, taskId: string): string {
    // JSON keeps the three parts apart whatever characters they hold.
    return `${kind}:${JSON.stringify([server, grant, taskId])}`;
  }

  /**
   * Records a task created by `grant`'s call; `ttlMs` is the server's (null: none given). The
   * record is kept for the TTL and an hour more, and as long again from each use past half of
   * that (a server keeps a task's result for its TTL after it ends); the claim on its end, for a
   * week.
   */
  async created(server: string, grant: string, taskId: string, record: TaskRecord, ttlMs: number | null): Promise<void> {
    const keepMs = Math.min(MAX_KEEP_MS, ttlMs === null ? DEFAULT_KEEP_MS : ttlMs + GRACE_MS);
    const now = this.now();
    const kept: Kept = { ...record, keepMs, keepUntil: now + keepMs };
    await this.store.put(this.key('task', server, grant, taskId), JSON.stringify(kept), kept.keepUntil);
    await this.store.put(this.key('task-open', server, grant, taskId), '1', now + MAX_KEEP_MS);
  }

  /** The task's record when `grant` created it, else null (unknown and foreign ids alike). */
  async owned(server: string, grant: string, taskId: string): Promise<TaskRecord | null> {
    const key = this.key('task', server, grant, taskId);
    const now = this.now();
    const raw = await this.store.get(key, now);
    if (raw === null) return null;
    let kept: Kept;
    try {
      kept = JSON.parse(raw) as Kept;
    } catch {
      return null;
    }
    if (kept.keepUntil - now < kept.keepMs / 2) {
      const renewed = { ...kept, keepUntil: now + kept.keepMs };
      // A record in use stays; failing to renew it now leaves it as it was.
      void Promise.resolve().then(() => this.store.put(key, JSON.stringify(renewed), renewed.keepUntil)).catch(() => {});
    }
    return kept;
  }

  /** True once per task: the caller that gets true records its end. */
  claimEnd(server: string, grant: string, taskId: string): Awaitable<boolean> {
    const taken = this.store.take(this.key('task-open', server, grant, taskId), this.now());
    return taken instanceof Promise ? taken.then((v) => v !== null) : taken !== null;
  }

  /** Another instance saw the task end (`at`, its clock): kept for the row's instance, as long as a claim. */
  async noteEnd(server: string, grant: string, taskId: string, note: EndNote): Promise<void> {
    await this.store.put(this.key('task-end', server, grant, taskId), JSON.stringify(note), this.now() + MAX_KEEP_MS);
  }

  /** The end another instance noted, if one did; taken (the row's instance alone reads it). */
  async takeEndNote(server: string, grant: string, taskId: string): Promise<EndNote | null> {
    const raw = await this.store.take(this.key('task-end', server, grant, taskId), this.now());
    if (raw === null) return null;
    try {
      return JSON.parse(raw) as EndNote;
    } catch {
      return null;
    }
  }
}
