import { batchRefusal } from './batches.js';
import { methodRefusal, METHOD_NOT_FOUND } from './methods.js';
import { TaskRequests } from './session-tasks.js';
import { progressTokenOf } from './session-types.js';
import { clientAnswer, clientMessage } from './shape.js';
import { NotDelivered, Refused } from './upstream.js';
import type { TraceCarrier } from '../telemetry/index.js';
import {
  errorResponse, idKey, isObject, isValidId,
  GATEWAY_RESTARTING, INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RESTARTING_DATA, type Id, type Json,
} from './messages.js';

export type { SessionIdentity, SessionOptions } from './session-types.js';

const UNANSWERED = '. The call had been sent, so it may have run: it counts against its limits.';

/**
 * One client session: every message from the client passes `fromClient`, every message from the
 * server passes `fromServer`. Only tools/call requests and tools/list answers are acted on;
 * everything else is forwarded as parsed, so what the server receives is what was checked.
 *
 * This file is the client side (order, batches, shape, methods) and the transport's hooks; the
 * layers below are tasks (session-tasks.ts), the server side (session-server.ts), calls held for
 * approval (session-approvals.ts) and the tools/call path (session-calls.ts).
 */
export class PolicySession extends TaskRequests {
  /** Messages that arrived while an asynchronous decision was pending: order is kept. */
  private backlog: unknown[] = [];
  /** Client messages still being handled asynchronously (CallPath.deciding counts those waiting only for their decision). */
  private running = 0;
  /** An initialize was forwarded: a second one in the session is refused (it could renegotiate the version). */
  private initializing = false;
  /** With telemetry on: the trace context of the HTTP request each message came in. */
  private carriers?: WeakMap<object, TraceCarrier>;

  get inFlight(): number {
    return this.pending.size;
  }

  /** A listed tool's inputSchema, once toolgate's own listing of the server's tools (if running) is done. */
  async toolInputSchema(name: string): Promise<unknown> {
    await this.listing;
    return this.tools.inputSchema(name);
  }

  /** One line of client input (stdio framing). Order is kept: each message is handled after the one before. */
  fromClientLine(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.opts.toClient(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid JSON'));
      return;
    }
    this.fromClient(message);
  }

  /** One client message; `http`: the trace context headers of the HTTP request that carried it. */
  fromClient(message: unknown, http?: TraceCarrier): void {
    if (http && this.opts.telemetry) {
      const carriers = (this.carriers ??= new WeakMap());
      // A batch's elements are each handled as if they came alone: each gets the POST's context.
      for (const m of Array.isArray(message) ? message : [message]) if (typeof m === 'object' && m !== null) carriers.set(m, http);
    }
    if (this.running === 0 || this.joinsDecisions(message)) this.process(message);
    else this.backlog.push(message);
  }

  /**
   * A tools/call that comes while only tools/calls are waiting for their decisions asks for its
   * own at once (its reservation joins theirs, in order: one group commit for a busy session)
   * and is carried out after them. Anything else waits until nothing is pending, in order.
   */
  private joinsDecisions(message: unknown): boolean {
    return this.running === this.deciding && this.backlog.length === 0 && this.listing === undefined
      && isObject(message) && message.method === 'tools/call' && isValidId(message.id);
  }

  private process(message: unknown): void {
    let result: void | Promise<void>;
    try {
      result = this.handleClient(message);
    } catch (err) {
      this.failed(message, err as Error);
      return;
    }
    if (!(result instanceof Promise)) return;
    this.running++;
    result.catch((err: Error) => this.failed(message, err)).finally(() => {
      this.running--;
      while (this.running === 0 && this.backlog.length > 0) this.process(this.backlog.shift());
    });
  }


  private handleClient(input: unknown): void | Promise<void> {
    if (Array.isArray(input)) {
      const refusal = batchRefusal(input, this.protocolVersion);
      if (refusal) return this.reject(null, INVALID_REQUEST, refusal);
      this.opts.onBatch?.(input);
      // Each element as if it came alone, before anything that came after the batch: every call in it is judged.
      const rest = [...input];
      while (rest.length > 0 && (this.running === 0 || this.joinsDecisions(rest[0]))) this.process(rest.shift());
      this.backlog.unshift(...rest);
      return;
    }
    if (!isObject(input) || input.jsonrpc !== '2.0') {
      this.reject(null, INVALID_REQUEST, 'Invalid request: expected a JSON-RPC 2.0 object');
      return;
    }
    // From here on only its JSON-RPC members, spelt exactly (SPEC section 9): what is judged is what is forwarded.
    const shaped = clientMessage(input);
    if ('refusal' in shaped) return this.reject(isValidId(input.id) ? input.id : null, shaped.code, shaped.refusal);
    const message = shaped.message;
    const hasId = Object.hasOwn(message, 'id');
    if (!Object.hasOwn(message, 'method')) {
      if (hasId && isValidId(message.id) && this.own.answer(message, 'client')) return;
      // A response to a server→client request still open (sampling, elicitation, roots, ping), as exactly that.
      const answer = hasId && isValidId(message.id) ? clientAnswer(message) : undefined;
      if (!answer) this.reject(null, INVALID_REQUEST, 'Invalid request: no method, nor a result or an error object');
      else if (this.serverAsked.answered(idKey(message.id as Id))) return this.answerServer(answer);
      else this.opts.log.warn({ id: JSON.stringify(message.id)?.slice(0, 80) }, 'dropped an answer to no open request of the server');
      return;
    }
    const { method } = message;
    const id = hasId ? message.id : undefined;
    if (hasId && !isValidId(id)) {
      this.reject(null, INVALID_REQUEST, 'Invalid request: id must be a string or a number');
      return;
    }
    const replyId = (id as Id | undefined) ?? null;
    if (typeof method !== 'string' || Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error')) {
      if (hasId) this.reject(replyId, INVALID_REQUEST, 'Invalid request: method must be a string, without result or error');
      return;
    }
    // tasks/update comes with the tasks extension of the modern era.
    const refusal = method === 'tasks/update' && this.opts.clientEra === 'modern' ? null : methodRefusal(method, this.protocolVersion, this.opts.passthroughMethods);
    if (refusal) {
      if (hasId) this.reject(replyId, METHOD_NOT_FOUND, refusal);
      else this.opts.log.warn({ method: JSON.stringify(method) }, 'dropped a notification whose method the MCP specification does not define');
      return;
    }
    // The envelope and the method must agree: a lenient server acts on the method whether or not an
    // id is there, and toolgate's checks (the policy, the task guard, the pool's id rewriting) go by
    // the envelope. A notification method with an id is not a request; a request method without one
    // is not a notification (an operator's passthrough method may be either).
    const notificationMethod = method.startsWith('notifications/');
    if (hasId && notificationMethod) {
      this.reject(replyId, INVALID_REQUEST, `Invalid request: ${method.slice(0, 80)} is a notification and carries no id`);
      return;
    }
    if (!hasId && !notificationMethod && !this.opts.passthroughMethods?.includes(method)) {
      this.opts.log.warn({ method: JSON.stringify(method).slice(0, 80) }, 'dropped a request sent as a notification (no id): it would bypass the checks its request gets');
      return;
    }
    if (!hasId) {
      if (method === 'notifications/cancelled' && this.cancelled(message.params) === 'held') return;
      this.opts.toServer(message);
      if (method === 'notifications/initialized') {
        if (this.serverHasTools) this.listTools();
        else if (!this.initializeAnswered && !this.initializedEarly) {
          // Calls wait as for a listing: for the answer, then for the listing it starts.
          this.initializedEarly = true;
          const early = new Promise<void>((resolve) => { this.releaseEarly = resolve; });
          this.listing = early;
          void early.then(() => { if (this.listing === early) this.listing = undefined; });
        }
      }
      return;
    }
    const key = idKey(id as Id);
    if (this.pending.has(key)) {
      this.reject(replyId, INVALID_REQUEST, `Invalid request: id ${JSON.stringify(id)} is already in use by a request in flight`);
      return;
    }
    if (this.closed) {
      this.reject(replyId, INTERNAL_ERROR, 'The upstream MCP server is not running');
      return;
    }
    // A session negotiates its version once, on every transport (Streamable HTTP refuses it before this).
    if (method === 'initialize' && this.initializing) return this.reject(replyId, INVALID_REQUEST, 'Invalid request: the session is already initialized; initialize is sent once per session');
    this.initializing ||= method === 'initialize';
    if (method === 'initialize' && isObject(message.params) && isObject(message.params.clientInfo) && typeof message.params.clientInfo.name === 'string') {
      this.clientName = message.params.clientInfo.name;
      this.clientElicits = isObject(message.params.capabilities) && isObject(message.params.capabilities.elicitation);
    }
    const trace = this.opts.telemetry?.request(method, id as Id, message.params, this.carriers?.get(input), this.protocolVersion);
    if (trace) this.traces.set(key, trace);
    if (method === 'tools/call') return this.toolsCall(id as Id, key, message);
    if (this.isTaskRequest(method)) return this.taskRequest(id as Id, key, message);
    const paged = method === 'tools/list' && isObject(message.params) && message.params.cursor !== undefined;
    this.pending.set(key, { method, started: this.now(), paged, id: id as Id, progressToken: progressTokenOf(message.params), trace });
    if (trace) message.params = trace.forward(message.params) as Json;
    this.opts.toServer(message);
  }

  /** The client went away before the answer: the call is cancelled upstream. */
  clientGone(id: Id): void {
    const pending = this.pending.get(idKey(id));
    if (!pending) return;
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'the client disconnected' } };
    if (this.cancelled(cancel.params) !== 'held') this.opts.toServer(cancel);
  }

  /**
   * A message could not be delivered upstream: its request, if any, fails now instead of hanging.
   * A call's reservation is given back only when the transport knows the message never reached
   * the server (`NotDelivered`); otherwise the call may have run, and it counts.
   */
  deliveryFailed(message: Json, err: Error): void {
    if (!isValidId(message.id) || Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error')) return;
    const key = idKey(message.id);
    const pending = this.pending.get(key);
    if (!pending) return;
    this.pending.delete(key);
    if (err instanceof Refused) {
      // Never sent (a pool exhausted, a method a pooled server cannot serve): its own error, its reservation given back.
      this.finish(pending, 'unreachable', false);
      this.opts.toClient(errorResponse(message.id, err.code, err.message, err.data));
      return;
    }
    const never = err instanceof NotDelivered;
    this.finish(pending, never ? 'unreachable' : 'unanswered', !never);
    this.reject(message.id, INTERNAL_ERROR, `The upstream MCP server could not be reached: ${err.message}${never ? '' : UNANSWERED}`);
  }

  /**
   * The upstream is gone: every request in flight gets a clear error. A call already written
   * upstream keeps its reservation (the server may have run it before it died; SPEC section 2).
   */
  upstreamClosed(reason: string): void {
    this.closed = true;
    this.deadlines.stop();
    this.own.failAll(reason);
    for (const [key, pending] of this.pending) {
      this.pending.delete(key);
      const forwarded = pending.decision !== undefined;
      this.finish(pending, forwarded ? 'unanswered' : 'unreachable', forwarded);
      this.reject(pending.id ?? null, INTERNAL_ERROR, `The upstream MCP server is unavailable: ${reason}${forwarded ? UNANSWERED : ''}`);
    }
  }

  /**
   * The gateway stops and its grace period is over: every request still in flight is answered
   * now. One already forwarded is cancelled upstream and keeps its reservation (it may have run);
   * one never forwarded (waiting for its decision or for approval) gets the retryable restart
   * error. Returns how many were forwarded.
   */
  cancelInFlight(reason: string): number {
    this.restart();
    let forwarded = 0;
    for (const [key, pending] of this.pending) {
      this.pending.delete(key);
      const id = pending.id ?? null;
      if (pending.held || (pending.method === 'tools/call' && pending.decision === undefined)) {
        this.finish(pending, 'unreachable', false);
        this.opts.toClient(errorResponse(id, GATEWAY_RESTARTING, 'The gateway is restarting, so this call was not forwarded: call again.', RESTARTING_DATA));
        continue;
      }
      forwarded++;
      this.opts.toServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: `toolgate: ${reason}` } });
      this.finish(pending, 'cancelled', true);
      this.reject(id, INTERNAL_ERROR, `${reason}: the request was cancelled upstream${pending.method === 'tools/call' ? UNANSWERED : '.'}`);
    }
    return forwarded;
  }
}
