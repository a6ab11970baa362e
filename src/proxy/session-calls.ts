import type { AuditDecision, AuditEvent, AuditRef } from '../audit/index.js';
import { malformedName, type CallContext, type Decision } from '../engine/index.js';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { TaskBook } from '../tasks/records.js';
import { TaskGuard } from '../tasks/guard.js';
import { MemoryOAuthStore } from '../state/memory.js';
import { hasResults, outcomeWithFacts, shapeFromServer, type ResultFacts, type Shaped } from '../results/index.js';
import type { RequestTrace } from '../telemetry/index.js';
import { CallDeadlines } from './deadlines.js';
import { OwnRequests } from './own-requests.js';
import { progressTokenOf, type Continues, type Pending, type SessionOptions } from './session-types.js';
import { toolsCallParams } from './shape.js';
import { ToolCatalog } from './tool-catalog.js';
import { PoisonWatch } from '../poison/watch.js';
import type { FlowTracker } from '../flows/tracker.js';
import {
  denialResult, errorResponse, idKey, isObject, isValidId,
  INTERNAL_ERROR, INVALID_PARAMS, type Id, type Json,
} from './messages.js';

function envelopeClientName(params: Json | undefined): string | undefined {
  const meta = params && isObject(params._meta) ? params._meta : undefined;
  const info = meta?.['io.modelcontextprotocol/clientInfo'];
  return isObject(info) && typeof info.name === 'string' ? info.name : undefined;
}

const DEFAULT_CALL_TIMEOUT_MS = 5 * 60_000;
/** The SDK's RequestTimeout code. */
const REQUEST_TIMEOUT = -32001;
const MALFORMED_NAME_RULE = '(tool-name)';
const APPROVAL_UNAVAILABLE = 'Approvals are not available in this toolgate yet, so the call was not forwarded.';

/**
 * The tools/call path of a session: shape, decide (limits reserved by the engine), hold for
 * approval (ApprovalHolds), deny or forward, and settle (commit or give back the reservation)
 * and finish the audit row when the call ends — answered, cancelled, timed out or lost.
 */
export abstract class CallPath {
  clientName?: string;
  protected readonly pending = new Map<string, Pending>();
  /** Of the client messages still being handled asynchronously, the tools/calls waiting only for their decision. */
  protected deciding = 0;
  /** The last of those calls to be carried out: the next one is carried out after it. */
  private lastDecided: Promise<unknown> = Promise.resolve();
  /** Toolgate's own listing of the server's tools, while it runs; tools/call waits for it. */
  protected listing?: Promise<void>;
  protected closed = false;
  protected readonly now: () => number;
  protected readonly tools = new ToolCatalog();
  /** Poisoned tool definitions in the server's listings (src/poison). */
  protected readonly poison: PoisonWatch;
  protected readonly own: OwnRequests;
  protected readonly deadlines: CallDeadlines;
  /** The tasks this session's calls create, and who may ask about them (src/tasks). */
  protected readonly taskGuard: TaskGuard;
  protected readonly opts: SessionOptions;
  /** With telemetry on: the traces of the client's requests, by id, until their answer goes out. */
  protected readonly traces = new Map<string, RequestTrace>();

  constructor(opts: SessionOptions) {
    // With telemetry, every answer to the client ends its request's trace; without, nothing is wrapped.
    const send = opts.toClient;
    this.opts = opts.telemetry ? { ...opts, toClient: (m, raw) => { this.answered(m); send(m, raw); } } : opts;
    this.now = opts.now ?? Date.now;
    const { identity } = opts;
    this.taskGuard = new TaskGuard({
      book: new TaskBook(opts.tasks ?? new MemoryOAuthStore(), this.now),
      server: identity.serverName,
      grant: identity.grant.id ?? identity.grant.label,
      audit: opts.audit,
      auditDb: opts.audit?.file === undefined ? undefined : `${hostname()}:${resolve(opts.audit.file)}`,
      log: opts.log,
      maxDepth: opts.maxDepth ?? 64,
      now: this.now,
    });
    this.poison = new PoisonWatch({ server: opts.identity.serverName, log: opts.log, audit: opts.audit, session: opts.identity.sessionId, grant: opts.identity.grant.label });
    this.own = new OwnRequests({ toClient: (m) => this.opts.toClient(m), toServer: (m) => this.opts.toServer(m) });
    this.deadlines = new CallDeadlines(opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, this.pending, (key, pending) => this.timedOut(key, pending), () => this.closed);
  }

  /** Holds a call for approval (ApprovalHolds). */
  protected abstract hold(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void;
  /** A tools/call with inputResponses or requestState: a retry that continues an earlier call (InputRounds). */
  protected abstract retried(id: Id, key: string, message: Json, ctx: CallContext): void | Promise<void>;

  protected failed(message: unknown, err: Error): void {
    this.opts.log.error({ err: err.message }, 'failed to handle a client message');
    if (isObject(message) && isValidId(message.id) && Object.hasOwn(message, 'method')) {
      this.pending.delete(idKey(message.id));
      this.reject(message.id, INTERNAL_ERROR, 'Internal error in toolgate; the message was not forwarded');
    }
  }

  /**
   * An answer to a client request is going out: its trace ends. An answer for an id still in
   * flight is not its answer (a second request with that id, refused), so that trace goes on.
   */
  private answered(m: Json): void {
    if (Object.hasOwn(m, 'method') || !isValidId(m.id)) return;
    const key = idKey(m.id);
    const trace = this.traces.get(key);
    if (!trace || this.pending.has(key)) return;
    this.traces.delete(key);
    if (Object.hasOwn(m, 'error')) trace.end({ kind: 'error', code: isObject(m.error) && typeof m.error.code === 'number' ? m.error.code : 0 });
    else trace.end({ kind: 'result', isError: isObject(m.result) && m.result.isError === true });
  }

  /** A request that gets no answer (cancelled): its trace ends now. */
  protected traceCancelled(key: string): void {
    const trace = this.traces.get(key);
    if (!trace) return;
    this.traces.delete(key);
    trace.end({ kind: 'cancelled' });
  }

  protected reject(id: Id | null, code: number, message: string): void {
    this.opts.toClient(errorResponse(id, code, message));
  }

  /**
   * The call's context. A modern (2026-07-28) client names itself on every request, in the
   * `_meta` envelope of the call's `params`; a legacy one once, in initialize.
   */
  protected context(tool: string, args: Record<string, unknown>, params?: Json): CallContext {
    const { identity } = this.opts;
    return {
      tool,
      args,
      grant: identity.grant,
      session: { id: identity.sessionId, client: (this.opts.clientEra === 'modern' ? envelopeClientName(params) : undefined) ?? this.clientName },
      server: { name: identity.serverName },
      now: this.now(),
    };
  }

  /** The hide-level poisoning of the called tool or of an advertised tool its name looks like. */
  protected poisonedHint(name: string, aliases: readonly string[] = this.tools.aliases(name)): { tool: string; findings: string } | undefined {
    const own = this.poison.hideLevelOf(name);
    if (own !== undefined) return { tool: name, findings: own };
    for (const tool of aliases) {
      const findings = this.poison.hideLevelOf(tool);
      if (findings !== undefined) return { tool, findings };
    }
    return undefined;
  }

  protected record(ctx: CallContext, decision: AuditDecision, rule: string, message?: string, forwarded = false, trace?: RequestTrace): AuditRef | undefined {
    const { audit, identity, auditArgs, engine } = this.opts;
    if (!audit) return undefined;
    const event: AuditEvent = {
      kind: 'call',
      server: identity.serverName,
      grant: identity.grant.label,
      session: identity.sessionId,
      client: ctx.session.client,
      tool: ctx.tool,
      decision,
      rule,
      message,
      args: ctx.args,
      storeArgValues: auditArgs,
      policyHash: engine.current.hash,
      awaitsOutcome: forwarded,
    };
    // With telemetry, the audit event's log record carries the call's trace.
    return trace ? trace.auditing(() => audit.append(event)) : audit.append(event);
  }

  /** `continues`: this call continues an earlier one whose requestState checked out (session-input.ts). */
  protected toolsCall(id: Id, key: string, message: Json, continues?: Continues): void | Promise<void> {
    const given = message.params;
    if (!isObject(given) || typeof given.name !== 'string') {
      this.reject(id, INVALID_PARAMS, 'Invalid params: tools/call needs params.name as a string');
      return;
    }
    const args = given.arguments ?? {};
    if (!isObject(args)) {
      this.reject(id, INVALID_PARAMS, 'Invalid params: tools/call arguments must be an object');
      return;
    }
    // Name, arguments, _meta and task only; refused when a server could read other members or keys than those judged.
    const shaped = toolsCallParams(given, this.opts.maxDepth ?? 64);
    if ('refusal' in shaped) return this.reject(id, shaped.code, shaped.refusal);
    const params = shaped.message as Json & { name: string };
    message.params = params; // the message is toolgate's own copy (clientMessage)
    if (this.listing) {
      // The policy may still be changing with the server's tool list: decide once it is known.
      const waiting: Pending = { method: 'tools/call', started: this.now(), id };
      this.pending.set(key, waiting);
      return this.listing.then(() => {
        if (this.pending.get(key) !== waiting) return;
        this.pending.delete(key);
        return this.toolsCall(id, key, message, continues);
      });
    }
    const trace = this.traces.get(key);
    trace?.tool(params.name);
    const ctx = this.context(params.name, args, params);
    const malformed = malformedName(params.name);
    if (malformed) {
      // A denial the agent can read, like any other: the name is never judged, so never forwarded.
      const text = `This call was not forwarded: ${malformed}.`;
      this.record(ctx, 'deny', MALFORMED_NAME_RULE, text, false, trace);
      this.opts.toClient(denialResult(id, text, MALFORMED_NAME_RULE, null));
      return;
    }
    if (!continues && (params.inputResponses !== undefined || params.requestState !== undefined)) return this.retried(id, key, message, ctx);
    // Reserve the id before awaiting the decision, so a second request with this id is refused.
    const pending: Pending = {
      method: 'tools/call', started: ctx.now, id, tool: params.name, progressToken: progressTokenOf(params), args,
      round: continues?.round, charged: continues?.charged, audit: continues?.audit, note: continues?.note, trace,
    };
    this.pending.set(key, pending);
    trace?.deciding();
    const aliases = this.tools.aliases(params.name);
    const pinChanged = this.opts.pins?.isChanged(params.name);
    const poisoned = this.poisonedHint(params.name, aliases);
    const charged = pending.charged;
    const flow = this.flowHint(ctx, pending);
    // The hints as one literal, not a spread of another object: the spread copy cost ~6 µs per call
    // (a session-only driver: 17 against 11.5 µs per allowed call), in its making and in the engine's reads of it.
    const decision = flow instanceof Promise
      ? flow.then((f) => this.opts.engine.decide(ctx, { aliases, pinChanged, poisoned, charged, flow: f }))
      : this.opts.engine.decide(ctx, { aliases, pinChanged, poisoned, charged, flow });
    if (!(decision instanceof Promise) && this.deciding === 0) return this.decided(id, key, message, ctx, pending, decision);
    // Carried out in arrival order: after the calls that were waiting for their decisions before it.
    this.deciding++;
    const done = Promise.all([decision, this.lastDecided])
      .then(([d]) => this.decided(id, key, message, ctx, pending, d))
      .finally(() => { this.deciding--; });
    this.lastDecided = done.catch(() => {});
    return done;
  }

  /** The tool's flow roles (kept on the pending call) and what its agent touched, when a flow rule may act on it. */
  protected flowHint(ctx: CallContext, pending: Pending): ReturnType<FlowTracker['hint']> {
    const flows = this.opts.flows;
    if (!flows) return undefined;
    const roles = flows.rolesOf(this.opts.engine, ctx.tool, this.tools.definition(ctx.tool));
    if (roles.length) pending.flowRoles = roles;
    return roles.length ? flows.hint(this.opts.engine, flows.agent(this.opts.identity.grant), roles, ctx.now) : undefined;
  }

  private decided(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void {
    if (this.pending.get(key) !== pending) {
      // Answered while the decision was pending (the upstream closed): only give back what it took.
      this.finish({ method: 'tools/call', started: ctx.now, decision }, 'unreachable', false);
      return;
    }
    const seconds = (this.now() - ctx.now) / 1000;
    const held = decision.verdict === 'approve' && decision.enforced && this.opts.approvals;
    const label = decision.verdict === 'allow' ? 'allow' : !decision.enforced ? 'shadow_deny' : held ? 'approve' : 'deny';
    // The trace learns the decision before a denial ends it.
    pending.trace?.decided(label, decision.rule, knownRule(decision.rule));
    if (held) this.hold(id, key, message, ctx, pending, decision);
    else this.carryOut(id, key, message, ctx, pending, decision);
    // Counted after the message went on its way: metrics are not on the call's path.
    this.opts.observe?.decision(ctx.tool, label, decision.rule, seconds);
  }

  protected deny(id: Id, key: string, ctx: CallContext, rule: string, text: string, meta?: Json): void {
    this.pending.delete(key);
    this.record(ctx, 'deny', rule, text, false, this.traces.get(key));
    this.opts.log.debug({ tool: ctx.tool, rule }, 'denied');
    this.opts.toClient(denialResult(id, text, rule, null, meta));
  }

  /** Denies, or records and forwards. */
  protected carryOut(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void {
    if (decision.verdict !== 'allow' && decision.enforced) {
      this.pending.delete(key);
      const approval = decision.verdict === 'approve';
      const text = approval ? `${decision.message} ${APPROVAL_UNAVAILABLE}` : decision.message!;
      this.record(ctx, 'deny', decision.rule, text, false, pending.trace);
      this.opts.log.debug({ tool: ctx.tool, rule: decision.rule }, 'denied');
      this.opts.toClient(denialResult(id, text, decision.rule, decision.retryAfterSeconds));
      return;
    }
    if (this.closed) {
      this.pending.delete(key);
      this.finish({ method: 'tools/call', started: ctx.now, decision }, 'unreachable', false);
      this.reject(id, INTERNAL_ERROR, 'The upstream MCP server is not running');
      return;
    }
    const shadowDeny = decision.verdict !== 'allow';
    pending.decision = decision;
    // A call that continues an earlier round keeps that round's row: one row per call, whatever its rounds.
    pending.audit ??= this.record(ctx, shadowDeny ? 'shadow_deny' : 'allow', decision.rule, decision.message ?? pending.note, true, pending.trace);
    if (pending.trace) message.params = pending.trace.forward(message.params) as Json;
    this.opts.toServer(message);
    // The wait starts when the call is written upstream (a call held for approval is not waiting on the server).
    if (this.deadlines.timeoutMs > 0 && this.pending.get(key) === pending) this.deadlines.start(pending);
  }

  /** No answer (nor progress) in time: cancelled upstream, committed (it was written), a timeout error to the client. */
  private timedOut(key: string, pending: Pending): void {
    this.pending.delete(key);
    const seconds = Math.round(this.deadlines.timeoutMs / 100) / 10;
    if (pending.id !== undefined && this.opts.withdraw?.(pending.id)) {
      // Still waiting for an upstream session (a pool's): never sent, so it does not count.
      this.finish(pending, 'unreachable', false);
      this.reject(pending.id, REQUEST_TIMEOUT, `The call to "${pending.tool}" timed out: it waited ${seconds} s (call_timeout) for a free upstream session and was not forwarded; retry in a moment.`);
      return;
    }
    this.opts.toServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: pending.id, reason: `toolgate: no answer within the call timeout (${seconds} s)` } });
    this.finish(pending, 'timeout', true);
    this.reject(pending.id!, REQUEST_TIMEOUT, `The call to "${pending.tool}" timed out: the upstream MCP server did not answer within ${seconds} s (call_timeout). It was cancelled upstream; it may have run.`);
  }

  /**
   * 'held' when the server never saw the cancelled request: a call waiting for approval, or a
   * request still waiting in the upstream's queue (a pool's), taken out of it. Its limit is given back.
   */
  protected cancelled(params: unknown): 'held' | undefined {
    if (!isObject(params) || !isValidId(params.requestId)) return;
    const key = idKey(params.requestId);
    const pending = this.pending.get(key);
    if (!pending) return;
    this.pending.delete(key);
    if (pending.held) {
      pending.held.abort();
      this.traceCancelled(key);
      return 'held';
    }
    if (pending.id !== undefined && this.opts.withdraw?.(pending.id)) {
      this.finish(pending, 'unreachable', false);
      this.traceCancelled(key);
      return 'held';
    }
    // The call may already have had its effect upstream, so its reservation stands.
    this.finish(pending, 'cancelled', true);
    this.traceCancelled(key);
  }

  /** The result policy's hook on a server message (src/results); null when it leaves the message as it is. */
  protected shapeResult(message: Json, pending: Pending | undefined): Shaped | null {
    // No `results` anywhere in the policy: every branch of shapeFromServer would answer null; the plain path skips it (and its closure).
    if (!hasResults(this.opts.engine.current)) return null;
    const shaped = shapeFromServer(this.opts.engine.current, message, pending, (tool) => this.context(tool, {}));
    if (shaped) this.opts.observe?.result?.(pending?.tool, shaped.redacted, shaped.facts);
    return shaped;
  }

  /**
   * A task's result that the policy flagged (flag_if), read through tasks/* or the task's
   * notification: untrusted content for the flow rules, as a call's flagged result is (SPEC 11).
   */
  protected touchFlaggedTask(tool: string, facts: ResultFacts | undefined): void {
    const flows = this.opts.flows;
    if (!flows || !facts || facts.flagged.length === 0) return;
    flows.touch(this.opts.engine, flows.agent(this.opts.identity.grant), ['untrusted'], tool, this.opts.identity.serverName, this.now());
  }

  protected finish(pending: Pending, outcome: string, ok: boolean, facts?: ResultFacts): void {
    this.deadlines.clear(pending);
    pending.held?.abort();
    if (pending.tool !== undefined) {
      const seconds = (this.now() - pending.started) / 1000;
      this.opts.observe?.upstream(pending.tool, outcome, seconds);
      pending.trace?.upstreamEnded(outcome, seconds);
    }
    // A call that created a task touches its roles now: it runs, and its result reaches the agent
    // later (tasks/result, the task's notification), where no call is finished to record it.
    if ((outcome === 'result' || outcome === 'task_created') && pending.decision && pending.tool !== undefined && this.opts.flows) {
      // A result the policy flagged (flag_if) is content the agent should not trust, whatever the tool's roles (SPEC 11).
      const roles = facts && facts.flagged.length > 0 && !pending.flowRoles?.includes('untrusted') ? [...(pending.flowRoles ?? []), 'untrusted'] : pending.flowRoles;
      const flows = this.opts.flows;
      if (roles) flows.touch(this.opts.engine, flows.agent(this.opts.identity.grant), roles, pending.tool, this.opts.identity.serverName, this.now());
    }
    if (pending.decision) {
      const settled = this.opts.engine.settle(pending.decision, ok);
      if (settled) settled.catch((err: Error) => this.opts.log.error({ err: err.message }, 'could not release a reservation'));
    }
    const { audit } = this.opts;
    const ref = pending.audit;
    if (ref && audit) {
      const text = outcomeWithFacts(roundsOutcome(outcome, pending.round), facts);
      if (pending.trace) pending.trace.auditing(() => audit.finish(ref, text, this.now() - pending.started));
      else audit.finish(ref, text, this.now() - pending.started);
    }
  }
}

/** The audit row's outcome of a call that took several rounds says so: `result after 2 rounds`. */
export function roundsOutcome(outcome: string, round: number | undefined): string {
  return round !== undefined && round > 1 ? `${outcome} after ${round} rounds` : outcome;
}

/** A rule the policy wrote for the tool (not the default, not a hide pattern): its name is a bounded metric label. */
export function knownRule(rule: string): boolean {
  return rule !== '(default)' && !rule.startsWith('/hide/');
}
