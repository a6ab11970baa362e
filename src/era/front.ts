/**
 * The modern client adapter (MCP 2026-07-28): stateless requests, each with its `_meta`
 * envelope, carried on one internal policy session that speaks the 2025-11-25 shape. The session
 * decides, audits and charges as for any client and knows no era; this adapter
 *
 * - opens the internal session on the first request (a synthesized initialize with that
 *   request's capabilities and client info, then notifications/initialized);
 * - answers `server/discover` and `subscriptions/listen` itself;
 * - gives every request an internal id (and progress token), so that requests of several
 *   clients sharing the session (`serve`) cannot collide, and maps answers back;
 * - stamps `resultType` (and cache fields) on every result on its way out, toolgate's own
 *   denials and holds included.
 */
import type { Logger } from 'pino';
import { errorResponse, idKey, isObject, isValidId, type Id, type Json } from '../proxy/messages.js';
import { METHOD_NOT_FOUND } from '../proxy/methods.js';
import { discoverResult } from './discover.js';
import type { Envelope, Refusal } from './envelope.js';
import { modernAnswer } from './results.js';
import { Subscriptions } from './subscriptions.js';
import { INTERNAL_VERSION } from './versions.js';

/** Where one client request's answer, and what the server sends about it before that, go. */
export interface ModernExchange {
  answer(message: Json): void;
  notify(message: Json): void;
  /** HTTP: why a tools/call's `Mcp-Param-*` headers disagree with its arguments (given the tool's inputSchema). */
  paramHeaders?(inputSchema: unknown, args: unknown): Refusal | undefined;
  /** HTTP: refuses the request before anything is decided (400). */
  refuse?(id: Id, refusal: Refusal): void;
  /** The client went away (HTTP: its response closed) before the request was forwarded: it is not. */
  readonly gone?: boolean;
}

/** The internal session as the adapter drives it (a PolicySession). */
export interface InternalSession {
  fromClient(message: unknown): void;
  clientGone(id: Id): void;
  toolInputSchema?(name: string): Promise<unknown>;
}

export interface FrontOptions {
  serverName: string;
  log: Logger;
  /** Methods forwarded besides those MCP 2026-07-28 defines (the operator's passthrough_methods). */
  passthroughMethods?: readonly string[];
  /** Server messages about no request of a modern client (stdio: the one client; HTTP: nobody). */
  general?: (message: Json) => void;
}

interface Tracked { exchange: ModernExchange; id: Id; method: string; token?: { inner: string; outer: unknown } }

const INIT_ID = 'toolgate-modern-initialize';

/**
 * The requests MCP 2026-07-28 defines for clients (the SDK's 2026 registry), and those of the
 * `io.modelcontextprotocol/tasks` extension. The 2025 ones it dropped (initialize, ping,
 * logging/setLevel, resources/subscribe, …) are -32601 for a modern client, as any unknown method.
 */
export const MODERN_REQUESTS: ReadonlySet<string> = new Set([
  'tools/call', 'tools/list', 'prompts/get', 'prompts/list', 'resources/list', 'resources/templates/list',
  'resources/read', 'completion/complete', 'server/discover', 'subscriptions/listen',
  'tasks/get', 'tasks/update', 'tasks/cancel',
]);
/** The notifications a modern client sends (listen's end is a cancellation too). */
const MODERN_NOTIFICATIONS: ReadonlySet<string> = new Set(['notifications/cancelled', 'notifications/progress']);

export class ModernFront {
  private session?: InternalSession;
  private opening?: Promise<Json>;
  private settleOpening?: { resolve(result: Json): void; reject(error: Json): void };
  private seq = 0;
  private readonly tracked = new Map<string, Tracked>();
  private readonly tokens = new Map<string, string>();
  readonly subscriptions = new Subscriptions();

  constructor(private readonly opts: FrontOptions) {}

  attach(session: InternalSession): void {
    this.session = session;
  }

  /** One request of a modern client whose envelope was checked (`readEnvelope`). */
  async request(message: Json, envelope: Envelope, exchange: ModernExchange): Promise<void> {
    const id = message.id as Id;
    const method = message.method as string;
    if (!MODERN_REQUESTS.has(method) && !this.opts.passthroughMethods?.includes(method)) {
      const why = method === 'initialize' ? 'MCP 2026-07-28 has no initialize; this request carries a 2026-07-28 _meta envelope' : `${JSON.stringify(method.slice(0, 80))} is not a method of MCP 2026-07-28, so toolgate does not forward it (an operator can allow it with passthrough_methods)`;
      exchange.answer(errorResponse(id, METHOD_NOT_FOUND, `Method not found: ${why}`));
      return;
    }
    let initialized: Json;
    try {
      initialized = await this.open(envelope);
    } catch (error) {
      exchange.answer({ jsonrpc: '2.0', id, error });
      return;
    }
    if (method === 'server/discover') {
      exchange.answer({ jsonrpc: '2.0', id, result: discoverResult(initialized, this.opts.serverName) });
      return;
    }
    if (method === 'subscriptions/listen') {
      this.subscriptions.listen(message, initialized, exchange);
      return;
    }
    if (method === 'tools/call' && exchange.paramHeaders && isObject(message.params) && typeof message.params.name === 'string') {
      const schema = await this.session!.toolInputSchema?.(message.params.name);
      const refusal = exchange.paramHeaders(schema, message.params.arguments);
      if (refusal) {
        if (exchange.refuse) exchange.refuse(id, refusal);
        else exchange.answer({ jsonrpc: '2.0', id, error: refusal });
        return;
      }
    }
    if (exchange.gone) return;
    const inner = `tg-${++this.seq}`;
    const params = isObject(message.params) ? { ...message.params } : undefined;
    const tracked: Tracked = { exchange, id, method };
    const meta = params && isObject(params._meta) ? params._meta : undefined;
    if (params && meta && meta.progressToken !== undefined) {
      tracked.token = { inner: `tg-p-${this.seq}`, outer: meta.progressToken };
      params._meta = { ...meta, progressToken: tracked.token.inner };
      this.tokens.set(tracked.token.inner, inner);
    }
    this.tracked.set(idKey(inner), tracked);
    this.session!.fromClient({ ...message, id: inner, ...(params ? { params } : {}) });
  }

  /**
   * A notification from a modern client. A cancellation names a request by its id: that is only
   * meaningful where one client owns the ids (stdio); HTTP clients cancel by closing the stream.
   */
  notification(message: Json): void {
    const method = message.method;
    if (method === 'notifications/initialized') return;
    if (method === 'notifications/cancelled') {
      const requestId = isObject(message.params) ? message.params.requestId : undefined;
      if (!isValidId(requestId)) return;
      if (this.subscriptions.cancel(requestId)) return;
      const found = [...this.tracked].filter(([, t]) => t.id === requestId);
      if (found.length !== 1) return;
      const inner = found[0][0].slice(1);
      this.session?.fromClient({ ...message, params: { ...message.params as Json, requestId: inner } });
      return;
    }
    if (!this.opening || !(MODERN_NOTIFICATIONS.has(method as string) || this.opts.passthroughMethods?.includes(method as string))) return;
    this.session?.fromClient(message);
  }

  /**
   * The client of these requests went away before their answers (HTTP: the response closed): each
   * is cancelled and forgotten (a cancelled request usually gets no answer; one that comes anyway
   * has nowhere to go), so requests given up keep nothing here.
   */
  gone(exchange: ModernExchange): void {
    this.subscriptions.drop(exchange);
    for (const [key, t] of [...this.tracked]) {
      if (t.exchange !== exchange) continue;
      this.tracked.delete(key);
      if (t.token) this.tokens.delete(t.token.inner);
      this.session?.clientGone(key.slice(1));
    }
  }

  /** What the internal session sends toward its client. */
  fromSession(message: Json): void {
    const hasMethod = Object.hasOwn(message, 'method');
    if (!hasMethod && message.id === INIT_ID) return this.opened(message);
    if (!hasMethod) {
      const key = isValidId(message.id) ? idKey(message.id) : '';
      const t = this.tracked.get(key);
      if (!t) {
        this.opts.general?.(message);
        return;
      }
      this.tracked.delete(key);
      if (t.token) this.tokens.delete(t.token.inner);
      t.exchange.answer(modernAnswer(t.method, { ...message, id: t.id }));
      return;
    }
    const method = message.method as string;
    if (this.subscriptions.route(message)) return;
    if (isValidId(message.id)) {
      // 2026-07-28 has no requests from server to client: the internal session hears that the
      // client cannot answer (the server's own request fails, as with a client that lacks the capability).
      this.session?.fromClient(errorResponse(message.id, METHOD_NOT_FOUND, `Method not found: the client speaks MCP 2026-07-28, which has no ${method.slice(0, 80)} request from server to client`));
      return;
    }
    // A notification reaches a request only when it names it: progress by the token toolgate gave
    // that request. Nothing else on the wire ties a server's notification to a request (2025
    // servers' log lines carry no request id), and under serve the internal session carries several
    // clients' requests, so "the only request open" may be another client's: such a notification
    // goes to the one client under run (`general`), and is dropped under serve.
    const token = method === 'notifications/progress' && isObject(message.params) ? message.params.progressToken : undefined;
    const inner = typeof token === 'string' ? this.tokens.get(token) : undefined;
    const t = inner === undefined ? undefined : this.tracked.get(idKey(inner));
    if (!t) {
      if (this.opts.general) this.opts.general(message);
      else this.opts.log.debug({ server: this.opts.serverName, method: method.slice(0, 80) }, 'dropped a server notification tied to no request of a 2026-07-28 client');
      return;
    }
    t.exchange.notify({ ...message, params: { ...message.params as Json, progressToken: t.token ? t.token.outer : token } });
  }

  /** The internal session is gone: every request still open fails. */
  closed(reason: string): void {
    for (const t of this.tracked.values()) t.exchange.answer(errorResponse(t.id, -32603, `The upstream MCP server is unavailable: ${reason}`));
    this.tracked.clear();
    this.subscriptions.closeAll();
  }

  private open(envelope: Envelope): Promise<Json> {
    if (this.opening) return this.opening;
    const opening = new Promise<Json>((resolve, reject) => { this.settleOpening = { resolve, reject }; });
    this.opening = opening;
    this.session!.fromClient({
      jsonrpc: '2.0',
      id: INIT_ID,
      method: 'initialize',
      params: {
        protocolVersion: INTERNAL_VERSION,
        capabilities: envelope.capabilities,
        clientInfo: envelope.clientInfo ?? { name: 'modern-client', version: '0' },
      },
    });
    return opening;
  }

  private opened(message: Json): void {
    const settle = this.settleOpening;
    this.settleOpening = undefined;
    if (isObject(message.result)) {
      this.session!.fromClient({ jsonrpc: '2.0', method: 'notifications/initialized' });
      settle?.resolve(message.result);
      return;
    }
    // Not opened: the next request tries again.
    this.opening = undefined;
    const error = isObject(message.error) ? message.error : { code: -32603, message: 'the upstream MCP server did not answer initialize' };
    settle?.reject(error);
  }
}
