import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { idKey, INTERNAL_ERROR, isObject, isValidId, type Json } from './messages.js';
import { InputRounds } from './upstream-modern-input.js';
import type { Upstream } from './upstream.js';
import {
  claimsModern, discoverRequest, errorText, identityFrom, initializeAnswer, isInputRequired,
  speaksModern, withEnvelope, withoutEnvelope, MODERN_VERSION, type ClientIdentity, type UpstreamProtocol,
} from './upstream-modern-wire.js';

export type UpstreamEra = 'legacy' | 'modern';

export interface EraUpstreamOptions {
  protocol: UpstreamProtocol;
  /** The transport to the server: it carries the probe and, if the server is modern, everything after. */
  transport: Upstream;
  /**
   * Where the 2025 era goes when the probe finds a legacy server: the same transport when not
   * given (stdio: one child speaks either era); a Streamable HTTP server needs the legacy client.
   */
  legacy?: () => Upstream;
  /**
   * A new transport to the same server (stdio: the command started again): some 2025 servers
   * exit on any request before initialize, so one that dies on the probe in `auto` is started
   * again and spoken to in 2025. `onRespawn` is told of the new one (its exit is the one to watch).
   */
  respawn?: () => Upstream;
  onRespawn?: (transport: Upstream) => void;
  log: Logger;
  /** How long the probe waits for the discover answer before taking the server as legacy (default 10 s). */
  probeTimeoutMs?: number;
}

/**
 * The upstream-era adapter: the session speaks the 2025 form (initialize, then requests), and
 * this turns it into 2026-07-28 for a server that speaks it. The session's initialize is
 * answered from `server/discover` (in `auto`, a discover refused with an error or left
 * unanswered means a legacy server, which then gets the initialize itself: the MCP stdio
 * backward-compatibility probe); `notifications/initialized` is not sent to a modern server;
 * every other request and notification gets the `_meta` envelope. Answers pass as they come,
 * except an `input_required` result to a request whose client is legacy (it did not claim
 * 2026-07-28 in its own `_meta`): such a client cannot retry with `inputResponses`, and must not
 * take the result as the request's end, so it is asked the 2025 way (upstream-modern-input.ts),
 * or gets an error when it cannot answer.
 */
export class EraUpstream implements Upstream {
  onmessage?: (message: unknown, raw?: string) => void;
  onclose?: (reason: string) => void;
  readonly started?: Promise<void>;
  /** Known once the session's initialize has been handled. */
  era?: UpstreamEra;
  private active: Upstream;
  private client: ClientIdentity = { capabilities: {} };
  /** Messages from the session held while the probe runs, with their senders' promises. */
  private held?: { message: Json; done: (p: Promise<void>) => void }[];
  private probeId?: string;
  /** Every probe id sent: an answer to one after the probe concluded is dropped, not passed on. */
  private readonly probed = new Set<string>();
  /** Requests in flight to a modern server from clients that did not claim 2026-07-28. */
  private readonly legacyClients = new Set<string>();
  /** Such a client's input_required answers, asked of it the 2025 way. */
  private readonly rounds: InputRounds;

  constructor(private readonly opts: EraUpstreamOptions) {
    this.active = this.attach(opts.transport);
    this.started = opts.transport.started;
    if (opts.protocol === 'legacy') this.era = 'legacy';
    this.rounds = new InputRounds({
      toClient: (m) => this.onmessage?.(m),
      retry: (m) => this.toModern(m),
      capabilities: () => this.client.capabilities,
      log: opts.log,
    });
  }

  private attach(t: Upstream): Upstream {
    t.onmessage = (m, raw) => this.fromServer(m, raw);
    t.onclose = (reason) => {
      if (t === this.active && this.pendingProbe && this.opts.protocol === 'auto' && this.opts.respawn && !this.respawned) return this.restart(reason);
      this.onclose?.(reason);
    };
    return t;
  }

  private respawned = false;

  /** The server died on the probe: it is started again and gets the initialize. */
  private restart(reason: string): void {
    this.respawned = true;
    this.opts.log.warn(`the upstream ended on server/discover (${reason}): starting it again to speak an MCP revision before ${MODERN_VERSION}`);
    this.active = this.attach(this.opts.respawn!());
    this.opts.onRespawn?.(this.active);
    this.concluded(this.pendingProbe!.initialize, undefined, 'the server exited on server/discover');
  }

  send(message: Json): Promise<void> {
    if (this.held) return new Promise((resolve, reject) => this.held!.push({ message, done: (p) => p.then(resolve, reject) }));
    if (this.era === undefined && message.method === 'initialize' && isValidId(message.id)) return this.probe(message);
    if (this.era === 'modern') return this.toModern(message);
    return this.active.send(withoutEnvelope(message));
  }

  /** Opens the server the modern way, answering the session's initialize from server/discover. */
  private probe(initialize: Json): Promise<void> {
    this.client = identityFrom(initialize.params);
    const id = `toolgate-discover-${randomUUID()}`;
    this.probeId = id;
    this.probed.add(id);
    this.held = [];
    // Pinned to 2026-07-28 there is nothing to fall back to: the answer is waited for.
    const timer = setTimeout(() => {
      if (this.probeId !== id || this.opts.protocol !== 'auto') return;
      this.opts.log.info(`the upstream did not answer server/discover within ${this.probeTimeoutMs / 1000} s`);
      this.concluded(initialize, undefined);
    }, this.probeTimeoutMs);
    timer.unref();
    this.pendingProbe = { initialize, timer };
    return this.active.send(discoverRequest(id, this.client)).catch((err: Error) => {
      if (this.probeId === id) { this.probeId = undefined; this.pendingProbe = undefined; clearTimeout(timer); this.release(); }
      throw err;
    });
  }

  private pendingProbe?: { initialize: Json; timer: NodeJS.Timeout };

  private get probeTimeoutMs(): number {
    return this.opts.probeTimeoutMs ?? 10_000;
  }

  /** The probe's outcome: the discover answer (a result or an error), or none (timed out). */
  private concluded(initialize: Json, answer: Json | undefined, because?: string): void {
    this.probeId = undefined;
    if (this.pendingProbe) clearTimeout(this.pendingProbe.timer);
    this.pendingProbe = undefined;
    const id = initialize.id as string | number;
    if (answer && speaksModern(answer)) {
      this.era = 'modern';
      this.opts.log.info(`the upstream speaks MCP ${MODERN_VERSION}`);
      this.onmessage?.(initializeAnswer(id, initialize.params, answer));
      this.release();
      return this.listen(answer);
    }
    const why = because ?? (!answer ? 'no answer to server/discover' : answer.error !== undefined ? `server/discover answered ${errorText(answer)}` : `server/discover does not list ${MODERN_VERSION}`);
    if (this.opts.protocol === MODERN_VERSION) {
      this.era = 'modern';
      this.onmessage?.({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `The upstream MCP server does not speak ${MODERN_VERSION}, which its configuration requires (protocol: "${MODERN_VERSION}"): ${why}` } });
      return this.release();
    }
    this.era = 'legacy';
    this.opts.log.info(`the upstream speaks an MCP revision before ${MODERN_VERSION} (${why})`);
    if (this.opts.legacy) {
      const old = this.active;
      old.onmessage = undefined;
      old.onclose = undefined;
      void old.close().catch(() => {});
      this.active = this.attach(this.opts.legacy());
    }
    const sent = this.active.send(withoutEnvelope(initialize));
    sent.catch((err: Error) => this.onmessage?.({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `The upstream MCP server could not be reached: ${err.message}` } }));
    this.release();
  }

  /** Sends what the session sent while the probe ran, in order. */
  private release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const h of held) h.done(this.send(h.message));
  }

  /**
   * A modern server sends list changes only on a `subscriptions/listen` stream: one is opened for
   * the lists its capabilities say change, so the session still re-lists the tools (pins, the
   * recommended policy) and the client still hears of it, as from a 2025 server.
   */
  private listen(discover: Json): void {
    const caps = isObject(discover.result) && isObject(discover.result.capabilities) ? discover.result.capabilities : {};
    const changes = (kind: string) => isObject(caps[kind]) && (caps[kind] as Json).listChanged === true;
    const notifications: Json = {};
    if (changes('tools')) notifications.toolsListChanged = true;
    if (changes('prompts')) notifications.promptsListChanged = true;
    if (changes('resources')) notifications.resourcesListChanged = true;
    if (Object.keys(notifications).length === 0) return;
    this.listenId = `toolgate-listen-${randomUUID()}`;
    const request = { jsonrpc: '2.0', id: this.listenId, method: 'subscriptions/listen', params: withEnvelope({ notifications }, this.client) };
    this.active.send(request).catch((err: Error) => this.opts.log.warn({ err: err.message }, 'could not subscribe to the upstream\'s list changes'));
  }

  private listenId?: string;

  private isOwnSubscription(params: unknown): boolean {
    return this.listenId !== undefined && isObject(params) && isObject(params._meta) && params._meta['io.modelcontextprotocol/subscriptionId'] === this.listenId;
  }

  private toModern(message: Json): Promise<void> {
    const method = message.method;
    if (typeof method !== 'string') {
      if (this.rounds.answered(message)) return Promise.resolve();
      return this.active.send(message); // an answer to a server request
    }
    if (method === 'notifications/initialized') return Promise.resolve();
    // 2026-07-28 has no ping and no logging/setLevel: toolgate answers ping itself, and keeps the
    // level to send in every request's envelope, as that revision carries it.
    if ((method === 'ping' || method === 'logging/setLevel') && isValidId(message.id)) {
      if (method === 'logging/setLevel') {
        const level = isObject(message.params) ? message.params.level : undefined;
        if (typeof level !== 'string') return this.answerLater({ jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'Invalid params: logging/setLevel needs params.level' } });
        this.client.logLevel = level;
      }
      return this.answerLater({ jsonrpc: '2.0', id: message.id, result: {} });
    }
    if (method === 'notifications/cancelled' && isObject(message.params) && isValidId(message.params.requestId)) this.rounds.done(message.params.requestId);
    if (isValidId(message.id) && !claimsModern(message.params)) {
      this.legacyClients.add(idKey(message.id));
      this.rounds.sent(message);
    }
    return this.active.send({ ...message, params: withEnvelope(message.params, this.client) });
  }

  /** An answer toolgate gives in the server's place, after the session has taken note of the request. */
  private answerLater(answer: Json): Promise<void> {
    queueMicrotask(() => this.onmessage?.(answer));
    return Promise.resolve();
  }

  private fromServer(message: unknown, raw?: string): void {
    if (isObject(message) && message.method === 'notifications/subscriptions/acknowledged' && this.isOwnSubscription(message.params)) return;
    if (!isObject(message) || Object.hasOwn(message, 'method') || !isValidId(message.id)) return this.onmessage?.(message, raw);
    if (this.listenId !== undefined && message.id === this.listenId) {
      this.opts.log.info(`the upstream ended toolgate's subscription to its list changes${isObject(message.error) ? `: ${errorText(message)}` : ''}`);
      return;
    }
    if (this.probeId !== undefined && message.id === this.probeId) return this.concluded(this.pendingProbe!.initialize, message);
    if (typeof message.id === 'string' && this.probed.has(message.id)) return; // a late or second answer to a probe
    // Only requests sent to a modern server are kept there: a legacy upstream's answers pass without a key.
    if (this.legacyClients.size > 0 && this.legacyClients.delete(idKey(message.id))) {
      if (isInputRequired(message)) {
        // Asked of the client the 2025 way, or (when it cannot answer) an error.
        const instead = this.rounds.inputRequired(message);
        if (instead) this.onmessage?.(instead);
        return;
      }
      this.rounds.done(message.id);
    }
    this.onmessage?.(message, raw);
  }

  async close(): Promise<void> {
    if (this.pendingProbe) clearTimeout(this.pendingProbe.timer);
    await this.active.close();
  }
}

/**
 * The upstream for a configured protocol: the era adapter around the transport (for `legacy`
 * too: it still keeps a modern client's envelope keys from the 2025 server).
 */
export function withEra(protocol: UpstreamProtocol, transport: Upstream, log: Logger, more: Pick<EraUpstreamOptions, 'legacy' | 'respawn' | 'onRespawn'> = {}): EraUpstream {
  return new EraUpstream({ protocol, transport, log, ...more });
}
