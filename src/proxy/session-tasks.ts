import {
  createdTask, lacksTasksExtension, relatedTaskId, requestedTaskId, taskNotFound, tasksExtensionMissing, TASK_REQUESTS,
} from '../tasks/shapes.js';
import { ServerSide } from './session-server.js';
import type { Pending } from './session-types.js';
import {
  DECISION_META_KEY, errorResponse, idKey, INTERNAL_ERROR, INVALID_PARAMS, isObject, isValidId, type Id, type Json,
} from './messages.js';

const MAX_TASK_ASKS = 10_000;
const NOT_HELD = 'Input sent to a running task cannot be held for approval, so it was not forwarded.';

/**
 * The task layer of a session (the rules are in src/tasks/guard.ts): tasks/* requests reach the
 * upstream only for the grant's own tasks, tasks/update's input is judged, and the answers that
 * create, list or end tasks are read on their way back.
 */
export abstract class TaskRequests extends ServerSide {
  /** Task notifications still being checked: they reach the client in the order they came. */
  private notices: Promise<void> = Promise.resolve();
  /** The server's open requests made for a task (2025-11-25: elicitation while it runs), by request key: their task. */
  private readonly taskAsks = new Map<string, string>();

  /**
   * A server request made for a task (`_meta["io.modelcontextprotocol/related-task"]`): it
   * reaches the client only when the task is its grant's (else the server is told the task is
   * not found), and the client's answer to it is judged as the task's input. True when handled here.
   */
  protected serverAsksForTask(message: Json, raw?: string): boolean {
    const taskId = isValidId(message.id) ? relatedTaskId(message.params) : undefined;
    if (taskId === undefined) return false;
    const key = idKey(message.id as Id);
    if (this.taskAsks.size >= MAX_TASK_ASKS) this.taskAsks.delete(this.taskAsks.keys().next().value!);
    this.taskAsks.set(key, taskId);
    const owned = this.taskGuard.owns(taskId);
    this.notices = this.notices.then(() => owned).then((ok) => {
      if (ok) {
        // Redacted as any elicitation or sampling request of the server (src/results).
        const shaped = this.shapeResult(message, undefined);
        return this.opts.toClient(shaped?.message ?? message, shaped ? undefined : raw);
      }
      this.taskAsks.delete(key);
      if (this.serverAsked.answered(key)) this.opts.toServer({ jsonrpc: '2.0', id: message.id, error: taskNotFound(null).error });
    }).catch((err: Error) => this.opts.log.warn({ err: err.message }, 'dropped a server request for a task whose owner could not be checked'));
    return true;
  }

  /**
   * The client's answer to a server request (already checked to answer an open one). An answer
   * that gives a running task its input (an accepted elicitation, in the 2025-11-25 shape) is
   * judged like tasks/update: refused, the server gets the policy's error instead.
   */
  protected answerServer(answer: Json): void | Promise<void> {
    const key = idKey(answer.id as Id);
    const taskId = this.taskAsks.get(key);
    this.taskAsks.delete(key);
    if (taskId === undefined || !isObject(answer.result)) {
      this.opts.toServer(answer);
      return;
    }
    return this.taskGuard.input(taskId, { [String(answer.id)]: answer.result }, (tool, args, approved) => this.judgeInput(tool, args, approved)).then((refusal) => {
      this.opts.toServer(refusal ? { jsonrpc: '2.0', id: answer.id, error: refusal.error } : answer);
    });
  }

  protected taskNotice(message: Json, raw?: string): boolean {
    const owned = this.taskGuard.notice(message);
    if (!owned) return false;
    this.notices = this.notices.then(() => owned).then(
      (tool) => {
        if (tool === null) return;
        // The extension's notification carries the task's result: its tool's result policy holds for it.
        const shaped = this.shapeResult(message, { method: 'tasks/get', started: 0, taskTool: tool });
        this.touchFlaggedTask(tool, shaped?.facts);
        this.opts.toClient(shaped?.message ?? message, shaped ? undefined : raw);
      },
      (err: Error) => this.opts.log.warn({ err: (err as Error).message }, 'dropped a task notification whose owner could not be checked'),
    );
    return true;
  }

  /** Whether a client request is a tasks/* request about one task (handled by `taskRequest`). */
  protected isTaskRequest(method: string): boolean {
    return TASK_REQUESTS.has(method);
  }

  /** A tasks/get, tasks/result, tasks/cancel or tasks/update: forwarded only when the grant's own task, and (update) its input allowed. */
  protected taskRequest(id: Id, key: string, message: Json): Promise<void> {
    const method = message.method as string;
    // A 2026-07-28 client reaches tasks only through the extension, declared on the request itself.
    if (this.opts.clientEra === 'modern' && lacksTasksExtension(message.params)) {
      this.opts.toClient(tasksExtensionMissing(id));
      return Promise.resolve();
    }
    const pending: Pending = { method, started: this.now(), id, taskId: requestedTaskId(message.params) };
    // Reserved before the lookup, so a second request with this id is refused.
    this.pending.set(key, pending);
    return this.taskGuard.admit(method, message.params, (tool, args, approved) => this.judgeInput(tool, args, approved)).then((admission) => {
      if (this.pending.get(key) !== pending) return;
      if ('answer' in admission) {
        this.pending.delete(key);
        this.opts.toClient(admission.answer(id));
        return;
      }
      if (this.closed) {
        this.pending.delete(key);
        this.reject(id, INTERNAL_ERROR, 'The upstream MCP server is not running');
        return;
      }
      pending.taskTool = admission.tool;
      this.opts.toServer(message);
    });
  }

  /**
   * Input for a running task, judged like the call's arguments: the whole decision order but the
   * limits (the call was charged when it was made). Null: forward it; else the refusal to answer.
   */
  private async judgeInput(tool: string, args: Record<string, unknown>, approvedRule?: string): Promise<Json | null> {
    const ctx = this.context(tool, args);
    const decision = await this.opts.engine.decide(ctx, { aliases: this.tools.aliases(tool), pinChanged: this.opts.pins?.isChanged(tool), uncharged: true });
    if (decision.verdict === 'allow') return null;
    // A person approved this call under this rule, and the input changes none of the arguments they
    // saw: it is part of the call they approved. Anything else would need a new approval.
    if (decision.verdict === 'approve' && approvedRule !== undefined && decision.rule === approvedRule) return null;
    const text = decision.verdict === 'approve' ? `${decision.message} ${NOT_HELD}` : decision.message!;
    this.record(ctx, decision.enforced ? 'deny' : 'shadow_deny', decision.rule, `input for a running task: ${text}`);
    if (!decision.enforced) return null;
    return { jsonrpc: '2.0', error: { code: INVALID_PARAMS, message: `[POLICY DENIED] ${text}`, data: { [DECISION_META_KEY]: { rule: decision.rule, retryAfterSeconds: null } } } };
  }

  /**
   * The upstream's answer to a tools/call that created a task, or to a task request: true when it
   * is handled here (the answer reaches the client once the task is recorded, or once a task
   * list is filtered).
   */
  protected taskAnswer(pending: Pending, message: Json, raw?: string): boolean {
    if (pending.method === 'tools/call') {
      const task = Object.hasOwn(message, 'error') ? undefined : createdTask(message.result);
      // Not a task (the usual case): settled by the caller.
      if (!task) return false;
      // The call ran once, was charged once: its row says a task runs, and later how it ended.
      this.finish(pending, 'task_created', true);
      const call = { tool: pending.tool!, args: pending.args ?? {}, audit: pending.audit?.eventId, started: pending.started, approvedRule: pending.heldBy };
      this.taskGuard.created(task, call).then(
        () => this.opts.toClient(message, raw),
        (err: Error) => {
          this.opts.log.error({ err: err.message }, 'could not record a task: its client will not be able to reach it');
          this.opts.toClient(message, raw);
        },
      );
      return true;
    }
    if (pending.method === 'tasks/list' && isObject(message.result)) {
      this.taskGuard.listed(message.result).then(
        (result) => this.opts.toClient({ ...message, result }),
        (err: Error) => {
          this.opts.log.error({ err: err.message }, 'could not check the owners of listed tasks');
          this.opts.toClient(errorResponse(pending.id ?? null, INTERNAL_ERROR, 'Internal error in toolgate: the task list could not be checked'));
        },
      );
      return true;
    }
    this.taskGuard.answered(pending.method, pending.taskId, message);
    return false;
  }
}
