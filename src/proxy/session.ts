import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { elicitationDecision, elicitationParams, outcomeMessage, retryMessage, waitingMessage, type Approvals } from '../approvals/index.js';
import type { AuditDecision, AuditLog, AuditRef } from '../audit/index.js';
import { malformedName, skeleton, type CallContext, type Decision, type Engine } from '../engine/index.js';
import type { Approval } from '../state/types.js';
import type { PinGuard } from './pins.js';
import { NotDelivered } from './upstream.js';
import {
  badMethod, denialResult, depthExceeds, errorResponse, idKey, isObject, isValidId,
  INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, type Id, type Json,
} from './messages.js';

export interface SessionIdentity {
  sessionId: string;
  serverName: string;
  grant: { label: string; tags: readonly string[] };
}

export interface SessionOptions {
  engine: Engine;
  identity: SessionIdentity;
  audit?: AuditLog;
  /** Store argument values (secrets masked) in the audit log, not only their keys and hash. */
  auditArgs?: boolean;
  log: Logger;
  /** `raw`, when given, is the message's exact JSON text (server messages passed on unchanged). */
  toClient(message: Json, raw?: string): void;
  toServer(message: Json): void;
  /** Pinned tool definitions to compare every tools/list answer with. */
  pins?: PinGuard;
  /** Called with every tools/list page before it is filtered (first: the page asked for without a cursor). */
  onToolsListed?: (tools: unknown[], first: boolean) => void;
  /** Told about every decision and every upstream answer to a tools/call (metrics). */
  observe?: {
    decision(tool: string, decision: string, rule: string, seconds: number): void;
    upstream(tool: string, outcome: string, seconds: number): void;
  };
  /** Human approval; without it, a call that needs approval is denied, saying so. */
  approvals?: Approvals;
  /** Largest accepted nesting depth of tools/call arguments. */
  maxDepth?: number;
  /**
   * How long a forwarded tools/call may wait for its answer (default 5 minutes; 0: for ever),
   * counted from when it is written upstream; each progress notification for it starts the wait
   * again. On expiry the call is cancelled upstream and the client gets a timeout error.
   */
  callTimeoutMs?: number;
  now?: () => number;
}

interface Pending {
  method: string;
  started: number;
  id?: Id;
  tool?: string;
  /** The request's _meta.progressToken, to route the server's progress to the right stream. */
  progressToken?: unknown;
  /** tools/list asked with a cursor (a later page). */
  paged?: boolean;
  decision?: Decision;
  audit?: AuditRef;
  /** When it runs out without an answer or progress (performance.now(); forwarded tools/call only). */
  deadline?: number;
  /** A call held for approval: aborting stops waiting (the approval itself stays pending). */
  held?: AbortController;
}

/** How often a held call whose client asked for progress hears that it is still waiting. */
const PROGRESS_EVERY_MS = 10_000;
/** How long a tools/call waits for toolgate's own listing of the server's tools. */
const LISTING_TIMEOUT_MS = 10_000;
const MAX_LIST_PAGES = 100;

function progressTokenOf(params: unknown): unknown {
  return isObject(params) && isObject(params._meta) ? params._meta.progressToken : undefined;
}

const DEFAULT_CALL_TIMEOUT_MS = 5 * 60_000;
/** The longest wait setTimeout takes (2^31 − 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The SDK's RequestTimeout code. */
const REQUEST_TIMEOUT = -32001;
const UNANSWERED = '. The call had been sent, so it may have run: it counts against its limits.';
const MALFORMED_NAME_RULE = '(tool-name)';
const APPROVAL_UNAVAILABLE = 'Approvals are not available in this toolgate yet, so the call was not forwarded.';

/**
 * One client session: every message from the client passes `fromClient`, every message from the
 * server passes `fromServer`. Only tools/call requests and tools/list answers are acted on;
 * everything else is forwarded as parsed, so what the server receives is what was checked.
 */
export class PolicySession {
  clientName?: string;
  /** The server's instructions from its initialize answer. */
  serverInstructions?: string;
  private readonly pending = new Map<string, Pending>();
  /** Forwarded tools/calls by their progress token, so the server's progress keeps them alive. */
  private readonly byProgressToken = new Map<unknown, Pending>();
  private readonly knownTools = new Map<string, string[]>();
  private readonly skeletons = new Map<string, string>();
  /** Messages that arrived while an asynchronous decision was pending: order is kept. */
  private backlog: unknown[] = [];
  /** Client messages still being handled asynchronously; of them, tools/calls waiting only for their decision. */
  private running = 0;
  private deciding = 0;
  /** The last of those calls to be carried out: the next one is carried out after it. */
  private lastDecided: Promise<unknown> = Promise.resolve();
  /** Requests toolgate itself sends (its own tools/list upstream, elicitation to the client), by id key. */
  private readonly own = new Map<string, { to: 'client' | 'server'; resolve(message: Json): void; related?: Id }>();
  private ownSeq = 0;
  private readonly ownPrefix = `toolgate-${randomUUID().slice(0, 8)}-`;
  /** Toolgate's own listing of the server's tools, while it runs; tools/call waits for it. */
  private listing?: Promise<void>;
  private serverHasTools = false;
  private clientElicits = false;
  private closed = false;
  private readonly now: () => number;
  private readonly callTimeoutMs: number;
  /** One timer for the whole session, due at the earliest deadline of its forwarded calls (none per call). */
  private deadlineTimer?: NodeJS.Timeout;

  constructor(private readonly opts: SessionOptions) {
    this.now = opts.now ?? Date.now;
    this.callTimeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  }

  get inFlight(): number {
    return this.pending.size;
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

  fromClient(message: unknown): void {
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

  /** A bug must not forward the message or kill the session: the request gets an internal error. */
  private failed(message: unknown, err: Error): void {
    this.opts.log.error({ err: err.message }, 'failed to handle a client message');
    if (isObject(message) && isValidId(message.id) && Object.hasOwn(message, 'method')) {
      this.pending.delete(idKey(message.id));
      this.reject(message.id, INTERNAL_ERROR, 'Internal error in toolgate; the message was not forwarded');
    }
  }

  private reject(id: Id | null, code: number, message: string): void {
    this.opts.toClient(errorResponse(id, code, message));
  }

  private handleClient(message: unknown): void | Promise<void> {
    if (Array.isArray(message)) {
      this.reject(null, INVALID_REQUEST, 'JSON-RPC batches are not supported: send one message per line');
      return;
    }
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      this.reject(null, INVALID_REQUEST, 'Invalid request: expected a JSON-RPC 2.0 object');
      return;
    }
    const hasId = Object.hasOwn(message, 'id');
    if (!Object.hasOwn(message, 'method')) {
      if (hasId && isValidId(message.id) && this.answerOwn(message, 'client')) return;
      // A response to a server→client request (sampling, elicitation, roots, ping).
      if (hasId && (Object.hasOwn(message, 'result') || Object.hasOwn(message, 'error'))) this.opts.toServer(message);
      else this.reject(null, INVALID_REQUEST, 'Invalid request: no method, result or error');
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
    const bad = badMethod(method);
    if (bad) {
      if (hasId) this.reject(replyId, INVALID_REQUEST, `Invalid request: ${bad}`);
      else this.opts.log.warn({ method: JSON.stringify(method) }, 'dropped a notification with a malformed method');
      return;
    }
    if (!hasId) {
      if (method === 'tools/call') {
        this.opts.log.warn('dropped a tools/call sent as a notification (no id): it would bypass the policy');
        return;
      }
      if (method === 'notifications/cancelled' && this.cancelled(message.params) === 'held') return;
      this.opts.toServer(message);
      if (method === 'notifications/initialized' && this.serverHasTools) this.listTools();
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
    if (method === 'initialize' && isObject(message.params) && isObject(message.params.clientInfo) && typeof message.params.clientInfo.name === 'string') {
      this.clientName = message.params.clientInfo.name;
      this.clientElicits = isObject(message.params.capabilities) && isObject(message.params.capabilities.elicitation);
    }
    if (method === 'tools/call') return this.toolsCall(id as Id, key, message);
    const paged = method === 'tools/list' && isObject(message.params) && message.params.cursor !== undefined;
    this.pending.set(key, { method, started: this.now(), paged, id: id as Id, progressToken: progressTokenOf(message.params) });
    this.opts.toServer(message);
  }

  private context(tool: string, args: Record<string, unknown>): CallContext {
    const { identity } = this.opts;
    return {
      tool,
      args,
      grant: identity.grant,
      session: { id: identity.sessionId, client: this.clientName },
      server: { name: identity.serverName },
      now: this.now(),
    };
  }

  private record(ctx: CallContext, decision: AuditDecision, rule: string, message?: string, forwarded = false): AuditRef | undefined {
    const { audit, identity, auditArgs, engine } = this.opts;
    if (!audit) return undefined;
    return audit.append({
      kind: 'call',
      server: identity.serverName,
      grant: identity.grant.label,
      session: identity.sessionId,
      client: this.clientName,
      tool: ctx.tool,
      decision,
      rule,
      message,
      args: ctx.args,
      storeArgValues: auditArgs,
      policyHash: engine.current.hash,
      awaitsOutcome: forwarded,
    });
  }

  private toolsCall(id: Id, key: string, message: Json): void | Promise<void> {
    const params = message.params;
    if (!isObject(params) || typeof params.name !== 'string') {
      this.reject(id, INVALID_PARAMS, 'Invalid params: tools/call needs params.name as a string');
      return;
    }
    const args = params.arguments ?? {};
    if (!isObject(args)) {
      this.reject(id, INVALID_PARAMS, 'Invalid params: tools/call arguments must be an object');
      return;
    }
    if (depthExceeds(args, this.opts.maxDepth ?? 64)) {
      this.reject(id, INVALID_PARAMS, 'Invalid params: arguments are nested too deeply');
      return;
    }
    if (this.listing) {
      // The policy may still be changing with the server's tool list: decide once it is known.
      const waiting: Pending = { method: 'tools/call', started: this.now(), id };
      this.pending.set(key, waiting);
      return this.listing.then(() => {
        if (this.pending.get(key) !== waiting) return;
        this.pending.delete(key);
        return this.toolsCall(id, key, message);
      });
    }
    const ctx = this.context(params.name, args);
    const malformed = malformedName(params.name);
    if (malformed) {
      // A denial the agent can read, like any other: the name is never judged, so never forwarded.
      const text = `This call was not forwarded: ${malformed}.`;
      this.record(ctx, 'deny', MALFORMED_NAME_RULE, text);
      this.opts.toClient(denialResult(id, text, MALFORMED_NAME_RULE, null));
      return;
    }
    // Reserve the id before awaiting the decision, so a second request with this id is refused.
    const pending: Pending = { method: 'tools/call', started: ctx.now, id, tool: params.name, progressToken: progressTokenOf(params) };
    this.pending.set(key, pending);
    const decision = this.opts.engine.decide(ctx, { aliases: this.aliases(params.name), pinChanged: this.opts.pins?.isChanged(params.name) });
    if (!(decision instanceof Promise) && this.deciding === 0) return this.decided(id, key, message, ctx, pending, decision);
    // Carried out in arrival order: after the calls that were waiting for their decisions before it.
    this.deciding++;
    const done = Promise.all([decision, this.lastDecided])
      .then(([d]) => this.decided(id, key, message, ctx, pending, d))
      .finally(() => { this.deciding--; });
    this.lastDecided = done.catch(() => {});
    return done;
  }

  private decided(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void {
    if (this.pending.get(key) !== pending) {
      // Answered while the decision was pending (the upstream closed): only give back what it took.
      this.finish({ method: 'tools/call', started: ctx.now, decision }, 'unreachable', false);
      return;
    }
    const seconds = (this.now() - ctx.now) / 1000;
    const held = decision.verdict === 'approve' && decision.enforced && this.opts.approvals;
    if (held) this.hold(id, key, message, ctx, pending, decision);
    else this.carryOut(id, key, message, ctx, pending, decision);
    // Counted after the message went on its way: metrics are not on the call's path.
    const label = decision.verdict === 'allow' ? 'allow' : !decision.enforced ? 'shadow_deny' : held ? 'approve' : 'deny';
    this.opts.observe?.decision(ctx.tool, label, decision.rule, seconds);
  }

  private deny(id: Id, key: string, ctx: CallContext, rule: string, text: string, meta?: Json): void {
    this.pending.delete(key);
    this.record(ctx, 'deny', rule, text);
    this.opts.log.debug({ tool: ctx.tool, rule }, 'denied');
    this.opts.toClient(denialResult(id, text, rule, null, meta));
  }

  /**
   * Holds a call for approval without holding up the session: other messages go on while it
   * waits. Ends in the call forwarded (approved, limits taken), denied, or — when the client
   * gives up — nothing sent at all, the approval staying pending for the same call made again.
   */
  private hold(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void {
    const approvals = this.opts.approvals!;
    const settings = decision.approval!;
    const held = new AbortController();
    pending.held = held;
    const run = async () => {
      const { identity } = this.opts;
      const { approval } = await approvals.open({
        server: identity.serverName, grant: identity.grant.label, session: identity.sessionId, client: this.clientName,
        tool: ctx.tool, args: ctx.args, rule: decision.rule, reason: decision.message ?? `"${ctx.tool}" needs human approval.`, settings,
      });
      if (held.signal.aborted) return;
      const meta = (a: typeof approval) => ({ approval: { id: a.id, status: a.status } });
      if (approval.status === 'approved') return this.release(id, key, message, pending, approval, held.signal);
      if (settings.mode === 'retry') return this.deny(id, key, ctx, decision.rule, retryMessage(approval, this.now(), approvals.howTo), meta(approval));
      if (settings.via.includes('client') && this.clientElicits) this.elicit(approval, id);
      const progress = this.progress(pending, () => waitingMessage(approval, this.now(), approvals.howTo));
      const outcome = await approvals.wait(approval, held.signal).finally(progress);
      if (!outcome || this.pending.get(key) !== pending) return;
      if (outcome.status === 'approved') return this.release(id, key, message, pending, outcome, held.signal);
      this.deny(id, key, ctx, decision.rule, outcomeMessage(outcome, settings.timeoutMs), meta(outcome));
    };
    run().catch((err: Error) => this.failed(message, err));
  }

  /**
   * An approved call: decided again (kill switch, rules and limits still apply; only the wait
   * for approval is passed), and forwarded if the approval is still unused — it is used now.
   */
  private async release(id: Id, key: string, message: Json, pending: Pending, approval: { id: string; decidedBy?: string }, signal: AbortSignal): Promise<void> {
    const params = message.params as Json;
    const ctx = this.context(params.name as string, (params.arguments ?? {}) as Record<string, unknown>);
    const decision = await this.opts.engine.decide(ctx, { aliases: this.aliases(ctx.tool), pinChanged: this.opts.pins?.isChanged(ctx.tool), approved: true });
    if (signal.aborted || this.pending.get(key) !== pending) {
      void this.opts.engine.settle(decision, false);
      return;
    }
    if (decision.verdict === 'allow' || !decision.enforced) {
      if (!(await this.opts.approvals!.use(approval.id))) {
        void this.opts.engine.settle(decision, false);
        this.deny(id, key, ctx, decision.rule, `Approval ${approval.id} was already used by an identical call; make the call again to ask for a new approval.`);
        return;
      }
      decision.message = `approved by ${approval.decidedBy ?? '?'} (${approval.id})`;
    }
    pending.held = undefined;
    pending.started = ctx.now;
    this.carryOut(id, key, message, ctx, pending, decision);
  }

  /** Progress notifications while a call waits, when the client asked for them; returns the stop function. */
  private progress(pending: Pending, text: () => string): () => void {
    const token = pending.progressToken;
    if (token === undefined || (typeof token !== 'string' && typeof token !== 'number')) return () => {};
    let n = 0;
    const send = () => this.opts.toClient({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: ++n, message: text() } });
    send();
    const timer = setInterval(send, PROGRESS_EVERY_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Asks the client's user (MCP elicitation) to approve or deny; their answer decides the approval. */
  private elicit(approval: Approval, related: Id): void {
    const approvals = this.opts.approvals!;
    const by = `client:${this.clientName ?? 'unknown'}`;
    this.ownRequest('elicitation/create', elicitationParams(approval), 'client', related, Math.max(1, approval.expiresAt - this.now()))
      .then((answer) => {
        const decision = elicitationDecision(answer);
        if (decision) return approvals.decide(approval.id, decision.approve, by, 'client', decision.reason);
      })
      .catch((err: Error) => this.opts.log.debug({ err: err.message }, 'the elicitation did not decide the approval'));
  }

  /**
   * Sends a request of toolgate's own to the server or the client and resolves with its answer.
   * Only the side it was sent to may answer it: a client must not be able to feed toolgate a tool
   * list, nor a server approve its own call.
   */
  private ownRequest(method: string, params: Json, to: 'client' | 'server', related?: Id, timeoutMs?: number): Promise<Json> {
    const id = `${this.ownPrefix}${++this.ownSeq}`;
    const key = idKey(id);
    return new Promise<Json>((resolve, reject) => {
      const timer = timeoutMs ? setTimeout(() => { this.own.delete(key); reject(new Error(`no answer to ${method}`)); }, timeoutMs) : undefined;
      timer?.unref();
      this.own.set(key, { to, resolve: (m) => { clearTimeout(timer); resolve(m); }, related });
      const message = { jsonrpc: '2.0', id, method, params };
      if (to === 'client') this.opts.toClient(message);
      else this.opts.toServer(message);
    });
  }

  private answerOwn(message: Json, from: 'client' | 'server'): boolean {
    const key = idKey(message.id as Id);
    const own = this.own.get(key);
    if (!own || own.to !== from) return false;
    this.own.delete(key);
    own.resolve(message);
    return true;
  }

  /**
   * Lists the server's tools itself (all pages), right after initialize and after every
   * list_changed, so the recommended policy, pins and look-alike checks know them before the
   * first tools/call is decided — also when the client calls without listing first.
   */
  private listTools(): void {
    const run = async () => {
      let cursor: unknown;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const answer = await this.ownRequest('tools/list', cursor === undefined ? {} : { cursor }, 'server', undefined, LISTING_TIMEOUT_MS);
        const result = answer.result;
        if (!isObject(result) || !Array.isArray(result.tools)) return;
        this.opts.onToolsListed?.(result.tools, page === 0);
        this.filterTools(result.tools);
        cursor = result.nextCursor;
        if (typeof cursor !== 'string' || cursor === '') return;
      }
    };
    const listing: Promise<void> = run()
      .catch((err: Error) => this.opts.log.warn({ err: err.message }, "could not list the server's tools"))
      .finally(() => { if (this.listing === listing) this.listing = undefined; });
    this.listing = listing;
  }

  /** Denies, or records and forwards. */
  private carryOut(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void {
    if (decision.verdict !== 'allow' && decision.enforced) {
      this.pending.delete(key);
      const approval = decision.verdict === 'approve';
      const text = approval ? `${decision.message} ${APPROVAL_UNAVAILABLE}` : decision.message!;
      this.record(ctx, 'deny', decision.rule, text);
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
    pending.audit = this.record(ctx, shadowDeny ? 'shadow_deny' : 'allow', decision.rule, decision.message, true);
    this.opts.toServer(message);
    // The wait starts when the call is written upstream (a call held for approval is not waiting on the server).
    if (this.callTimeoutMs > 0 && this.pending.get(key) === pending) {
      pending.deadline = performance.now() + this.callTimeoutMs;
      this.deadlineTimer ??= this.armDeadlines(this.callTimeoutMs);
      if (pending.progressToken !== undefined) this.byProgressToken.set(pending.progressToken, pending);
    }
  }

  private armDeadlines(ms: number): NodeJS.Timeout {
    // Node runs a longer timeout after 1 ms: a far deadline is checked again at the longest wait.
    const timer = setTimeout(this.checkDeadlines, Math.min(ms, MAX_TIMER_MS));
    timer.unref();
    return timer;
  }

  /**
   * Times out the calls whose deadline has passed, then waits for the earliest of the rest. The
   * timer that fired stays set meanwhile, so a call forwarded during the check (a client that
   * answers a timeout with a new call) arms none of its own; the map's iteration reaches it.
   */
  private readonly checkDeadlines = (): void => {
    const now = performance.now();
    let next = Infinity;
    for (const [key, pending] of this.pending) {
      if (pending.deadline === undefined) continue;
      if (pending.deadline <= now) this.timedOut(key, pending);
      else next = Math.min(next, pending.deadline);
    }
    this.deadlineTimer = next === Infinity || this.closed ? undefined : this.armDeadlines(next - now);
  };

  /** No answer (nor progress) in time: cancelled upstream, committed (it was written), a timeout error to the client. */
  private timedOut(key: string, pending: Pending): void {
    this.pending.delete(key);
    const seconds = Math.round(this.callTimeoutMs / 100) / 10;
    this.opts.toServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: pending.id, reason: `toolgate: no answer within the call timeout (${seconds} s)` } });
    this.finish(pending, 'timeout', true);
    this.reject(pending.id!, REQUEST_TIMEOUT, `The call to "${pending.tool}" timed out: the upstream MCP server did not answer within ${seconds} s (call_timeout). It was cancelled upstream; it may have run.`);
  }

  /** Advertised tool names that look like `name` (memoised: names repeat). */
  private aliases(name: string): readonly string[] {
    if (this.knownTools.size === 0) return [];
    let sk = this.skeletons.get(name);
    if (sk === undefined) {
      sk = skeleton(name);
      if (this.skeletons.size > 10_000) this.skeletons.clear();
      this.skeletons.set(name, sk);
    }
    return this.knownTools.get(sk) ?? [];
  }

  /** 'held' when the cancelled request was a call waiting for approval, which the server never saw. */
  private cancelled(params: unknown): 'held' | undefined {
    if (!isObject(params) || !isValidId(params.requestId)) return;
    const key = idKey(params.requestId);
    const pending = this.pending.get(key);
    if (!pending) return;
    this.pending.delete(key);
    if (pending.held) {
      pending.held.abort();
      return 'held';
    }
    // The call may already have had its effect upstream, so its reservation stands.
    this.finish(pending, 'cancelled', true);
  }

  private finish(pending: Pending, outcome: string, ok: boolean): void {
    if (pending.deadline !== undefined) {
      pending.deadline = undefined;
      if (this.byProgressToken.get(pending.progressToken) === pending) this.byProgressToken.delete(pending.progressToken);
    }
    pending.held?.abort();
    if (pending.tool !== undefined) this.opts.observe?.upstream(pending.tool, outcome, (this.now() - pending.started) / 1000);
    if (pending.decision) {
      const settled = this.opts.engine.settle(pending.decision, ok);
      if (settled) settled.catch((err: Error) => this.opts.log.error({ err: err.message }, 'could not release a reservation'));
    }
    if (pending.audit) this.opts.audit?.finish(pending.audit, outcome, this.now() - pending.started);
  }

  /** A message from the server. Only tools/list answers are changed; everything else passes as it came. */
  fromServer(message: unknown, raw?: string): void {
    if (!isObject(message)) {
      // A batch passes as it came; null, a number or a string is no message and has no id to answer.
      if (Array.isArray(message) && message.length > 0) this.opts.toClient(message as unknown as Json, raw);
      else this.opts.log.warn({ line: JSON.stringify(message)?.slice(0, 80) }, 'dropped a line from the server that is not a JSON-RPC message');
      return;
    }
    if (this.byProgressToken.size > 0 && message.method === 'notifications/progress' && isObject(message.params)) {
      const waiting = this.byProgressToken.get(message.params.progressToken);
      if (waiting?.deadline !== undefined) waiting.deadline = performance.now() + this.callTimeoutMs;
    }
    const isResponse = !Object.hasOwn(message, 'method') && isValidId(message.id);
    if (isResponse && this.answerOwn(message, 'server')) return;
    if (message.method === 'notifications/tools/list_changed') {
      this.opts.toClient(message, raw);
      this.listTools();
      return;
    }
    const pending = isResponse ? this.pending.get(idKey(message.id as Id)) : undefined;
    if (!pending) {
      this.opts.toClient(message, raw);
      return;
    }
    this.pending.delete(idKey(message.id as Id));
    if (pending.method === 'tools/call') {
      // Settled before the client hears the answer (a limit given back is free for its retry); the
      // outcome's journal line follows the answer within this turn.
      const failed = Object.hasOwn(message, 'error');
      const result = message.result;
      this.finish(pending, failed ? 'error' : isObject(result) && result.isError === true ? 'is_error' : 'result', !failed);
    }
    if (pending.method === 'initialize' && isObject(message.result)) {
      if (typeof message.result.instructions === 'string') this.serverInstructions = message.result.instructions;
      this.serverHasTools = isObject(message.result.capabilities) && isObject(message.result.capabilities.tools);
    }
    if (pending.method === 'tools/list' && isObject(message.result) && Array.isArray(message.result.tools)) {
      this.opts.onToolsListed?.(message.result.tools, !pending.paged);
      this.opts.toClient({ ...message, result: { ...message.result, tools: this.filterTools(message.result.tools) } });
    } else {
      this.opts.toClient(message, raw);
    }
  }

  /**
   * Remembers every listed tool for look-alike checks, then removes the ones the agent could
   * never call: hidden, denied outright or without an entry under default deny (Engine.listable),
   * and, when pins block, those whose definitions changed.
   */
  private filterTools(tools: unknown[]): unknown[] {
    const { engine } = this.opts;
    const changed = new Set(this.opts.pins?.review(tools) ?? []);
    const blockChanged = engine.current.pinsOnChange === 'block';
    return tools.filter((tool) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return true;
      const name = tool.name;
      const sk = skeleton(name);
      const names = this.knownTools.get(sk) ?? [];
      if (!names.includes(name)) this.knownTools.set(sk, [...names, name]);
      return engine.listable(name) && !(blockChanged && changed.has(name));
    });
  }

  /**
   * The client request a server→client message belongs to, for transports that answer on the
   * request's own stream (Streamable HTTP): progress by its token, anything else when exactly one
   * client request is in flight. Undefined: the session's general stream.
   */
  relatedRequest(message: Json): Id | undefined {
    if (!Object.hasOwn(message, 'method')) return undefined;
    if (isValidId(message.id)) {
      const own = this.own.get(idKey(message.id));
      if (own) return own.related;
    }
    const token = isObject(message.params) ? message.params.progressToken : undefined;
    const open = [...this.pending.values()].filter((p) => p.id !== undefined && p.method !== 'initialize');
    if (token !== undefined) return open.find((p) => p.progressToken === token)?.id;
    return open.length === 1 ? open[0].id : undefined;
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
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    for (const own of [...this.own.values()]) own.resolve({ jsonrpc: '2.0', error: { code: INTERNAL_ERROR, message: reason } });
    this.own.clear();
    for (const [key, pending] of this.pending) {
      this.pending.delete(key);
      const forwarded = pending.decision !== undefined;
      this.finish(pending, forwarded ? 'unanswered' : 'unreachable', forwarded);
      this.reject(pending.id ?? null, INTERNAL_ERROR, `The upstream MCP server is unavailable: ${reason}${forwarded ? UNANSWERED : ''}`);
    }
  }
}
