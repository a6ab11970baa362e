/**
 * The wire shapes of MCP tasks, in both eras, read without trusting them:
 *
 * - 2025-11-25 (task-augmented requests): a `tools/call` with `params.task` is answered
 *   `{task: {taskId, status, ttl, …}}` (CreateTaskResult); `tasks/get` answers the Task flat;
 *   `tasks/result` answers the call's own result; `tasks/list` answers `{tasks: [...]}`;
 *   `tasks/cancel` answers the Task; the server may send `notifications/tasks/status` (a Task).
 * - 2026-07-28, extension `io.modelcontextprotocol/tasks` (SEP-2663): the server decides to answer a
 *   `tools/call` with `{resultType: "task", taskId, status, ttlMs, …}` (flat); `tasks/get` answers
 *   a DetailedTask (`result` or `error` inlined when it ended, `inputRequests` while
 *   `input_required`); `tasks/update {taskId, inputResponses}` sends input; `tasks/cancel`; the
 *   server may send `notifications/tasks` (a DetailedTask). There is no `tasks/list`.
 */
import { isObject, type Id, type Json } from '../proxy/messages.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** The _meta key that ties a message to a task (2025-11-25: a server's request made while a task runs). */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** Client requests that name one task by `params.taskId`. */
export const TASK_REQUESTS = new Set(['tasks/get', 'tasks/result', 'tasks/cancel', 'tasks/update']);
/** Server notifications that carry one task's status. */
export const TASK_NOTIFICATIONS = new Set(['notifications/tasks/status', 'notifications/tasks']);

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
const STATUSES = new Set<string>(['working', 'input_required', 'completed', 'failed', 'cancelled']);
const TERMINAL = new Set<string>(['completed', 'failed', 'cancelled']);

/** A task as toolgate needs it: its id, its status, and how long the server keeps it (ms; null: no limit given). */
export interface TaskView { taskId: string; status: TaskStatus; ttlMs: number | null }

export function isTerminal(status: string): boolean {
  return TERMINAL.has(status);
}

/** A Task object of either era (ttl in 2025-11-25, ttlMs in the extension), or undefined. */
export function taskView(value: unknown): TaskView | undefined {
  if (!isObject(value) || typeof value.taskId !== 'string' || value.taskId === '' || typeof value.status !== 'string' || !STATUSES.has(value.status)) return undefined;
  const ttl = typeof value.ttlMs === 'number' ? value.ttlMs : typeof value.ttl === 'number' ? value.ttl : null;
  return { taskId: value.taskId, status: value.status as TaskStatus, ttlMs: ttl !== null && Number.isFinite(ttl) && ttl >= 0 ? ttl : null };
}

/** The task a tools/call result creates, in either shape, or undefined for an ordinary result. */
export function createdTask(result: unknown): TaskView | undefined {
  if (!isObject(result)) return undefined;
  if (result.resultType === 'task') return taskView(result);
  // 2025-11-25 CreateTaskResult: only when it is not also a tool result (a lenient server's `task` member in a CallToolResult is not a task).
  if (isObject(result.task) && !Array.isArray(result.content)) return taskView(result.task);
  return undefined;
}

/** `params.taskId` of a tasks/* request, or undefined when it is not a non-empty string. */
export function requestedTaskId(params: unknown): string | undefined {
  return isObject(params) && typeof params.taskId === 'string' && params.taskId !== '' ? params.taskId : undefined;
}

/** The task a server request is part of (`_meta["io.modelcontextprotocol/related-task"].taskId`), or undefined. */
export function relatedTaskId(params: unknown): string | undefined {
  const meta = isObject(params) && isObject(params._meta) ? params._meta[RELATED_TASK] : undefined;
  return isObject(meta) && typeof meta.taskId === 'string' && meta.taskId !== '' ? meta.taskId : undefined;
}

/**
 * The answer to a task another grant owns, or that toolgate never saw created: the error a server
 * gives for an unknown task (SEP-2663 "Task not found", SDK wording), so both read the same.
 */
export function taskNotFound(id: Id | null): Json {
  return { jsonrpc: '2.0', id, error: { code: -32602, message: 'Failed to retrieve task: Task not found' } };
}

/**
 * Whether a 2026-07-28 request's own client capabilities (its `_meta` envelope, which the modern
 * front door requires on every request and passes on) leave out the tasks extension. False when
 * the request carries no capabilities to read (no envelope: not a modern request's).
 */
export function lacksTasksExtension(params: unknown): boolean {
  const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
  const caps = meta?.['io.modelcontextprotocol/clientCapabilities'];
  return isObject(caps) && !(isObject(caps.extensions) && isObject(caps.extensions[TASKS_EXTENSION]));
}

/**
 * The answer to a 2026-07-28 tasks/* request whose client capabilities do not declare the tasks
 * extension (SEP-2663, SEP-2575 MissingRequiredClientCapability, -32021, what SDK v2 servers
 * answer): the task surface exists only for clients that negotiated it, and it is refused before
 * any task is looked up, so the answer tells nothing about which task ids exist.
 */
export function tasksExtensionMissing(id: Id | null): Json {
  return {
    jsonrpc: '2.0', id,
    error: {
      code: -32021,
      message: `Missing required client capability: the request's client capabilities do not declare the ${TASKS_EXTENSION} extension`,
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    },
  };
}

/**
 * What an answer to a tasks/* request tells about the task's end, or undefined when it is still
 * running (or the answer says nothing). tasks/result answering with a result means the task ended
 * (2025-11-25: it blocks until then); its JSON-RPC error is a failed or cancelled task, except
 * -32602, the server's "no such task" (purged after its TTL).
 */
export function outcomeOfAnswer(method: string, message: Json): TaskStatus | undefined {
  if (method === 'tasks/result') {
    if (Object.hasOwn(message, 'error')) {
      const error = isObject(message.error) ? message.error : {};
      // Invalid params: the server does not know the task (purged, expired), which says nothing of how it ended.
      if (error.code === -32602) return undefined;
      return typeof error.message === 'string' && /cancel/i.test(error.message) ? 'cancelled' : 'failed';
    }
    return isObject(message.result) ? 'completed' : undefined;
  }
  if (method === 'tasks/get' || method === 'tasks/cancel') {
    const task = taskView(message.result);
    return task && isTerminal(task.status) ? task.status : undefined;
  }
  return undefined;
}

/** The audit outcome of a task that ended: `task_completed`, `task_failed`, `task_cancelled`. */
export function auditOutcome(status: TaskStatus): string {
  return `task_${status}`;
}
