/**
 * Tasks through a policy session (SPEC section 10: "a task belongs to the grant that created
 * it"), in both eras (see shapes.ts). The session hands every task message here:
 *
 * - a tools/call answered with a task: the call was decided and charged once, like any call; its
 *   audit row gets `task_created` now and the task's end (`task_completed`, `task_failed`,
 *   `task_cancelled`) when toolgate sees it; the task is recorded under its grant before the
 *   client hears of it, so no request for it can come first;
 * - tasks/get, tasks/result, tasks/cancel, tasks/update: forwarded only for a task the asking
 *   grant created on this server; any other id is answered "not found" without reaching the
 *   upstream, the same answer for an id that never existed;
 * - tasks/update: the input it sends is judged like the call's arguments (`judge`);
 * - a tasks/list answer: only the grant's own tasks are shown;
 * - answers and status notifications that say a task ended finish its audit row, once (seen
 *   through another instance of a fleet, which cannot write this one's audit log: ends.ts).
 */
import type { Logger } from 'pino';
import type { AuditLog } from '../audit/index.js';
import { argumentsProblem } from '../proxy/shape.js';
import { INVALID_PARAMS, isObject, type Id, type Json } from '../proxy/messages.js';
import { taskEnds, type TaskEndWatch } from './ends.js';
import type { TaskBook, TaskRecord } from './records.js';
import {
  auditOutcome, isTerminal, outcomeOfAnswer, requestedTaskId, taskNotFound, taskView,
  TASK_NOTIFICATIONS, type TaskStatus, type TaskView,
} from './shapes.js';

/**
 * What the session decides for a running task's input (`args`: the call's arguments overlaid with
 * it): null to forward, or the answer to give instead. `approvedRule`: the rule a person approved
 * the call under, when the input changes none of the arguments they approved.
 */
export type UpdateJudge = (tool: string, args: Record<string, unknown>, approvedRule?: string) => Promise<Json | null>;

export interface TaskGuardOptions {
  book: TaskBook;
  server: string;
  /** The grant's key (its id, else its label): tasks are kept per grant. */
  grant: string;
  audit?: AuditLog;
  /** The audit database this toolgate writes (host and file; see TaskRecord.auditDb). */
  auditDb?: string;
  log: Logger;
  maxDepth: number;
  now: () => number;
  /** Where ends seen by other instances reach this one's rows (default: the process's watch). */
  ends?: TaskEndWatch;
}

/** A client request about one task: forward it, or answer it with `answer` (its id filled in). */
export type Admission = { forward: true; tool: string } | { answer: (id: Id) => Json };

export class TaskGuard {
  constructor(private readonly opts: TaskGuardOptions) {}

  /**
   * Whether a tasks/* request may reach the upstream. `judge` decides a tasks/update's input
   * (the call's arguments overlaid with what the input accepts).
   */
  async admit(method: string, params: unknown, judge: UpdateJudge): Promise<Admission> {
    const { book, server, grant } = this.opts;
    const taskId = requestedTaskId(params);
    const record = taskId === undefined ? null : await book.owned(server, grant, taskId);
    if (!record) return { answer: taskNotFound };
    // The task's tool goes with it: the answer carries that tool's result, shaped by its result policy.
    if (method !== 'tasks/update') return { forward: true, tool: record.tool };
    const refusal = await this.judged(record, (params as Json).inputResponses, judge);
    return refusal ? { answer: (id) => ({ ...refusal, id }) } : { forward: true, tool: record.tool };
  }

  /**
   * Input a client sends to a running task of its grant (`responses`: keyed like tasks/update's
   * inputResponses), judged like the call's arguments: null to forward it, or the error to answer
   * instead (JSON-RPC error object inside a message without id). A task that is not the grant's
   * takes no input.
   */
  async input(taskId: string, responses: Json, judge: UpdateJudge): Promise<Json | null> {
    const { book, server, grant } = this.opts;
    const record = await book.owned(server, grant, taskId);
    if (!record) return { jsonrpc: '2.0', error: taskNotFound(null).error };
    return this.judged(record, responses, judge);
  }

  private async judged(record: TaskRecord, responses: unknown, judge: UpdateJudge): Promise<Json | null> {
    if (!isObject(responses)) return { jsonrpc: '2.0', error: { code: INVALID_PARAMS, message: 'Invalid params: tasks/update needs inputResponses as an object' } };
    const problem = argumentsProblem(responses, this.opts.maxDepth);
    if (problem) return { jsonrpc: '2.0', error: { code: INVALID_PARAMS, message: `Invalid params: the input for a task ${problem}` } };
    const args = inputArguments(record.args, responses);
    // A person's approval covers the arguments they saw: input that changes one of them is not covered.
    const keeps = record.approvedRule !== undefined && Object.keys(record.args).every((k) => JSON.stringify(args[k]) === JSON.stringify(record.args[k]));
    return judge(record.tool, args, keeps ? record.approvedRule : undefined);
  }

  /**
   * A task a tools/call's answer created (`createdTask`), recorded under the grant; resolves once
   * it is, so the answer can go to the client.
   */
  async created(task: TaskView, call: TaskRecord): Promise<void> {
    const { book, server, grant, auditDb, audit } = this.opts;
    await book.created(server, grant, task.taskId, { ...call, auditDb }, task.ttlMs);
    if (isTerminal(task.status)) return void this.ended(task.taskId, task.status);
    if (audit && call.audit) {
      const row = { eventId: call.audit };
      (this.opts.ends ?? taskEnds).watch({ book, server, grant, taskId: task.taskId, started: call.started, finish: (outcome, ms) => audit.finish(row, outcome, ms) });
    }
  }

  /** The upstream's answer to a tasks/* request the guard let through. */
  answered(method: string, taskId: string | undefined, message: Json): void {
    if (taskId === undefined) return;
    const status = outcomeOfAnswer(method, message);
    if (status) void this.ended(taskId, status);
  }

  /**
   * A server notification about a task (`notifications/tasks/status`, `notifications/tasks`):
   * resolves to the task's tool when it is about a task of this grant (and records its end), null
   * when it must not reach the client (another grant's task — the extension's carries the task's
   * result — or no task it can name). Undefined for any other message.
   */
  notice(message: Json): Promise<string | null> | undefined {
    if (typeof message.method !== 'string' || !TASK_NOTIFICATIONS.has(message.method)) return undefined;
    const task = taskView(message.params);
    if (!task) return Promise.resolve(null);
    const { book, server, grant } = this.opts;
    return Promise.resolve(book.owned(server, grant, task.taskId)).then((record) => {
      if (!record) return null;
      if (isTerminal(task.status)) void this.ended(task.taskId, task.status);
      return record.tool;
    });
  }

  /** Whether the task is this grant's. */
  async owns(taskId: string): Promise<boolean> {
    const { book, server, grant } = this.opts;
    return (await book.owned(server, grant, taskId)) !== null;
  }

  /** A tasks/list result with only the grant's own tasks (the others, and malformed entries, removed). */
  async listed(result: Json): Promise<Json> {
    if (!Array.isArray(result.tasks)) return result;
    const { book, server, grant } = this.opts;
    const entries: unknown[] = result.tasks;
    // Looked up together: a page of tasks costs one round of the state store, not one per task.
    const owned = await Promise.all(entries.map((entry) => {
      const task = taskView(entry);
      return task ? book.owned(server, grant, task.taskId) : null;
    }));
    const kept = entries.filter((entry, i) => {
      if (!owned[i]) return false;
      const task = taskView(entry)!;
      if (isTerminal(task.status)) void this.ended(task.taskId, task.status);
      return true;
    });
    return { ...result, tasks: kept };
  }

  /** The task ended: its call's audit row gets the outcome, once across sessions and instances. */
  private async ended(taskId: string, status: TaskStatus): Promise<void> {
    const { book, server, grant, audit, log, now } = this.opts;
    try {
      const record = await book.owned(server, grant, taskId);
      if (!record) return;
      if (record.auditDb !== this.opts.auditDb) {
        // Another instance's row (a fleet with an audit database per instance): a note for it to finish the row (ends.ts).
        if (record.audit !== undefined && record.auditDb !== undefined) await book.noteEnd(server, grant, taskId, { status, at: now() });
        return;
      }
      (this.opts.ends ?? taskEnds).unwatch(server, grant, taskId);
      if (!(await book.claimEnd(server, grant, taskId))) return;
      if (audit && record.audit) audit.finish({ eventId: record.audit }, auditOutcome(status), now() - record.started);
    } catch (err) {
      log.warn({ err: (err as Error).message }, "could not record a task's end");
    }
  }
}

/**
 * The arguments a task's call runs with once its input arrives: the call's own, overlaid with the
 * content of every accepted elicitation among the responses (an elicited value reaches the tool
 * as an argument would). Other responses (declined, sampling, roots) add nothing.
 */
export function inputArguments(args: Record<string, unknown>, responses: Json): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...args };
  for (const key of Object.keys(responses)) {
    const response = responses[key];
    if (!isObject(response) || response.action !== 'accept' || !isObject(response.content)) continue;
    for (const [name, value] of Object.entries(response.content)) merged[name] = value;
  }
  return merged;
}
