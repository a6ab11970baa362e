import { sessionVersion } from './methods.js';
import { isInputRequired } from '../input/results.js';
import { InputRounds } from './session-input.js';
import { OpenServerRequests } from './shape.js';
import type { Pending } from './session-types.js';
import { idKey, isObject, isValidId, type Id, type Json } from './messages.js';

/** How long a tools/call waits for toolgate's own listing of the server's tools. */
const LISTING_TIMEOUT_MS = 10_000;
const MAX_LIST_PAGES = 100;

/**
 * The server side of a session: its answers (one to a tools/call settles it, tools/list is filtered
 * and checked against the pins, initialize tells the version and capabilities), its requests to
 * the client, and toolgate's own listing of its tools.
 */
export abstract class ServerSide extends InputRounds {
  /** The server's instructions from its initialize answer. */
  serverInstructions?: string;
  /** The protocol version the server answered initialize with: what decides methods and batches. */
  protocolVersion?: string;
  protected serverHasTools = false;
  protected initializeAnswered = false;
  /**
   * The client sent notifications/initialized before the initialize answer reached it (a pipe
   * that writes every line at once does): the server's tools are listed when the answer comes.
   */
  protected initializedEarly = false;
  protected releaseEarly?: () => void;
  /** The server's requests to the client still unanswered: the only ids a client's answer may carry. */
  protected readonly serverAsked = new OpenServerRequests();

  /** An answer about tasks (session-tasks.ts): true when handled there, delivered in its own time. */
  protected abstract taskAnswer(pending: Pending, message: Json, raw?: string): boolean;
  /** A server request made for a task (session-tasks.ts): true when handled there (delivered only to its grant). */
  protected abstract serverAsksForTask(message: Json, raw?: string): boolean;
  /** A notification about a task (session-tasks.ts): true when handled there (delivered only to its grant). */
  protected abstract taskNotice(message: Json, raw?: string): boolean;

  /**
   * Lists the server's tools itself (all pages), right after initialize and after every
   * list_changed, so the recommended policy, pins and look-alike checks know them before the
   * first tools/call is decided — also when the client calls without listing first.
   */
  protected listTools(): void {
    // One listing at a time: a list_changed during one lists again once it ends. Concurrent
    // listings each leased a pooled upstream session, so a server that announces list_changed as
    // it starts (server-everything does) made a grant's first request start three processes.
    if (this.listingNow) {
      this.listAgain = true;
      return;
    }
    const once = async () => {
      let cursor: unknown;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const answer = await this.own.request('tools/list', cursor === undefined ? {} : { cursor }, 'server', undefined, LISTING_TIMEOUT_MS);
        const result = answer.result;
        if (!isObject(result) || !Array.isArray(result.tools)) return;
        this.opts.onToolsListed?.(result.tools, page === 0);
        this.tools.filter(result.tools, this.opts.engine, this.opts.pins, this.poison);
        cursor = result.nextCursor;
        if (typeof cursor !== 'string' || cursor === '') return;
      }
    };
    const run = async () => {
      do {
        this.listAgain = false;
        try {
          await once();
        } catch (err) {
          if (!this.listAgain) throw err;
          this.opts.log.warn({ err: (err as Error).message }, "could not list the server's tools; listing again after list_changed");
        }
      } while (this.listAgain);
    };
    this.listingNow = true;
    const listing: Promise<void> = run()
      .catch((err: Error) => this.opts.log.warn({ err: err.message }, "could not list the server's tools"))
      .finally(() => {
        this.listingNow = false;
        this.listAgain = false;
        if (this.listing === listing) this.listing = undefined;
      });
    this.listing = listing;
  }
  private listingNow = false;
  private listAgain = false;

  /** A message from the server. Only tools/list answers are changed; everything else passes as it came. */
  fromServer(message: unknown, raw?: string): void {
    if (!isObject(message)) {
      // A batch's messages are each handled as if they came alone (a tools/list answer in one is
      // filtered, a tools/call answer settles its reservation); null, a number or a string is no
      // message and has no id to answer.
      if (Array.isArray(message) && message.length > 0 && message.every(isObject)) for (const m of message) this.fromServer(m);
      else this.opts.log.warn({ line: JSON.stringify(message)?.slice(0, 80) }, 'dropped a line from the server that is not a JSON-RPC message');
      return;
    }
    this.deadlines.heard(message);
    const isResponse = !Object.hasOwn(message, 'method') && isValidId(message.id);
    if (isResponse && this.own.answer(message, 'server')) return;
    if (!isResponse && isValidId(message.id)) {
      this.serverAsked.asked(idKey(message.id));
      if (this.serverAsksForTask(message, raw)) return;
    }
    if (!isResponse && this.taskNotice(message, raw)) return;
    if (message.method === 'notifications/tools/list_changed') {
      this.opts.toClient(message, raw);
      this.listTools();
      return;
    }
    const pending = isResponse ? this.pending.get(idKey(message.id as Id)) : undefined;
    // The result policy (src/results): redaction, max_bytes, deny_if and flag_if on what comes back.
    const shaped = this.shapeResult(message, pending);
    if (pending?.taskTool !== undefined) this.touchFlaggedTask(pending.taskTool, shaped?.facts);
    const out = shaped?.message ?? message;
    const outRaw = shaped ? undefined : raw;
    if (!pending) {
      this.opts.toClient(out, outRaw);
      return;
    }
    this.pending.delete(idKey(message.id as Id));
    if (pending.method === 'tools/call' && isInputRequired(message.result) && this.opts.requestStates && pending.tool !== undefined) {
      // A round of the call ended, not the call: the client's retry continues it (session-input.ts).
      this.passInput(pending, out);
      return;
    }
    if ((pending.method === 'tools/call' || pending.method.startsWith('tasks/')) && this.taskAnswer(pending, message, raw)) return;
    if (pending.method === 'tools/call') {
      // Settled before the client hears the answer (a limit given back is free for its retry); the
      // outcome's journal line follows the answer within this turn. Judged on the answer as the
      // server sent it: a result the policy withheld still ran upstream, and still counts.
      const failed = Object.hasOwn(message, 'error');
      const result = message.result;
      this.finish(pending, failed ? 'error' : isObject(result) && result.isError === true ? 'is_error' : 'result', !failed, shaped?.facts);
    }
    if (pending.method === 'initialize' && isObject(message.result)) {
      if (typeof message.result.instructions === 'string') this.serverInstructions = message.result.instructions;
      this.protocolVersion = sessionVersion(message.result.protocolVersion);
      this.serverHasTools = isObject(message.result.capabilities) && isObject(message.result.capabilities.tools);
      this.initializeAnswered = true;
      const info = message.result.serverInfo;
      this.opts.pins?.identify(isObject(info) && typeof info.name === 'string' ? info.name : undefined);
      if (this.initializedEarly && this.serverHasTools) this.listTools();
    }
    if (pending.method === 'initialize' && this.initializedEarly) {
      this.initializedEarly = false;
      this.releaseEarly?.();
    }
    if (pending.method === 'tools/list' && isObject(message.result) && Array.isArray(message.result.tools)) {
      this.opts.onToolsListed?.(message.result.tools, !pending.paged);
      this.opts.toClient({ ...message, result: { ...message.result, tools: this.tools.filter(message.result.tools, this.opts.engine, this.opts.pins, this.poison) } });
    } else {
      this.opts.toClient(out, outRaw);
    }
  }

  /**
   * The client request a server→client message belongs to, for transports that answer on the
   * request's own stream (Streamable HTTP): progress by its token, anything else when exactly one
   * client request is in flight. Undefined: the session's general stream.
   */
  relatedRequest(message: Json): Id | undefined {
    if (!Object.hasOwn(message, 'method')) return undefined;
    if (isValidId(message.id)) {
      const own = this.own.find(message.id);
      if (own) return own.related;
    }
    const token = isObject(message.params) ? message.params.progressToken : undefined;
    const open = [...this.pending.values()].filter((p) => p.id !== undefined && p.method !== 'initialize');
    if (token !== undefined) return open.find((p) => p.progressToken === token)?.id;
    return open.length === 1 ? open[0].id : undefined;
  }
}
