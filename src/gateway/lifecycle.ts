import type { Server, ServerResponse } from 'node:http';
import { HttpError } from '../http/errors.js';
import type { Logger } from '../log.js';
import { GATEWAY_RESTARTING, isObject, RESTARTING_DATA } from '../proxy/messages.js';
import type { StateHealth, StateStore } from '../state/types.js';
import type { Live } from './live-sessions.js';

/**
 * `starting`: listening (so /healthz answers) but grants and kill switches not yet loaded;
 * `ready`: serving; `stopping`: a stop began — no new connections or requests, in-flight calls
 * finishing within the grace period.
 */
export type Phase = 'starting' | 'ready' | 'stopping';

/** How often a stop looks whether the calls in flight have finished. */
const POLL_MS = 25;
/** How often loading grants and kill switches is tried again while the store does not answer. */
const RELOAD_MS = 1000;
/** How long a stop waits for connections to end once everything is answered, before it closes them. */
const LINGER_MS = 2000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A request, not a notification or a response: new work, which a stopping gateway refuses. */
function isRequest(m: unknown): boolean {
  return isObject(m) && typeof m.method === 'string' && Object.hasOwn(m, 'id');
}

/** What a stopping gateway answers a new request with, before anything is forwarded: 503, safe to send again. */
export function restartingError(): HttpError {
  return new HttpError(503, 'The gateway is restarting: this request was not forwarded. Send it again (start a new session if this one is gone).',
    { 'retry-after': String(RESTARTING_DATA.retryAfterSeconds), connection: 'close' }, GATEWAY_RESTARTING, { ...RESTARTING_DATA });
}

export interface LifecycleOptions {
  state: StateStore;
  log: Logger;
  /** The gateway's sessions by id. */
  sessions: Map<string, Live>;
  http: Server;
  /** Why the gateway runs on a previous version of a policy, per server (a rejected edit), for /healthz. */
  warnings: () => string[];
  servers: () => number;
}

/**
 * Readiness and a clean stop of `toolgate serve`: `/readyz` says ready once the grants and kill
 * switches are loaded (the policies are, before the gateway listens) and not ready from the moment
 * a stop begins, so a load balancer stops sending; `drain` then refuses new work, answers calls
 * held for approval (their approvals stay in the store) and lets forwarded calls finish within
 * the grace period before it cancels them upstream.
 */
export class Lifecycle {
  phase: Phase = 'starting';
  private why = 'loading grants and kill switches from the state store';
  private retry?: NodeJS.Timeout;
  private loaded?: Promise<void>;

  constructor(private readonly opts: LifecycleOptions) {}

  get stopping(): boolean {
    return this.phase === 'stopping';
  }

  /**
   * Loads the grants and kill switches (on Redis: this instance's copies of them) once; the
   * gateway is ready after. While the store does not answer it tries again every second (and is
   * not ready); resolves once ready, or when a stop begins first.
   */
  load(): Promise<void> {
    this.loaded ??= new Promise<void>((resolve) => {
      const attempt = async () => {
        if (this.phase !== 'starting') return resolve();
        try {
          await this.opts.state.grants.list();
          await this.opts.state.flags.listKillSwitches();
          if (this.phase === 'starting') this.phase = 'ready';
          resolve();
        } catch (err) {
          this.why = `cannot load grants and kill switches from the state store (${(err as Error).message}); trying again every second`;
          this.opts.log.warn(this.why);
          this.retry = setTimeout(() => void attempt(), RELOAD_MS);
        }
      };
      void attempt();
    });
    return this.loaded;
  }

  /**
   * `GET /healthz`, for liveness: 200 whenever the process answers — also while the store is down
   * (unlimited calls still pass, and every instance shares the store: `degraded`) and with a
   * rejected policy edit (the previous version still decides every call).
   */
  healthz(res: ServerResponse): void {
    const state: StateHealth = this.opts.state.health?.() ?? { kind: this.opts.state.kind, status: 'ok' };
    const warnings = this.opts.warnings();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      status: state.status === 'ok' && warnings.length === 0 ? 'ok' : 'degraded', servers: this.opts.servers(), sessions: this.opts.sessions.size, state, warnings,
    }));
  }

  /**
   * `GET /readyz`: 200 while ready, 503 while starting or stopping. A state store that is
   * unreachable or degraded after start does not make an instance unready: calls without limits
   * still pass (limited ones fail closed), the store is shared by every instance, so taking them
   * all out of the balancer would only turn a partial outage into a whole one (/healthz and
   * toolgate_state_up show it).
   */
  readyz(res: ServerResponse): void {
    const state: StateHealth = this.opts.state.health?.() ?? { kind: this.opts.state.kind, status: 'ok' };
    const ready = this.phase === 'ready';
    const reason = this.phase === 'starting' ? this.why : 'the gateway is stopping: it takes no new connections or requests';
    res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify({ status: this.phase, ...(ready ? {} : { reason }), state }));
  }

  /**
   * While stopping, a request that would start new work — a POST carrying a JSON-RPC request
   * (an initialize included), a GET opening a stream — is refused before anything is forwarded,
   * with 503 and JSON-RPC error -32050 (`data.retryable: true`). Notifications and answers to the
   * server's own requests (cancellations, elicitation answers for a call in flight) and DELETE
   * still pass.
   */
  admit(method: string | undefined, body?: unknown): void {
    if (this.phase !== 'stopping' || method === 'DELETE') return;
    if (method === 'POST' && body !== undefined && !(Array.isArray(body) ? body.some(isRequest) : isRequest(body))) return;
    throw restartingError();
  }

  private inFlight(): number {
    let n = 0;
    for (const l of this.opts.sessions.values()) n += l.session.inFlight;
    return n;
  }

  /**
   * The first part of a stop (SIGTERM, SIGINT): not ready, the listener closed (no new
   * connections; idle keep-alive ones are closed, busy ones after their answer), calls waiting
   * for approval answered "the gateway is restarting, call again", then a wait of up to
   * `graceMs` for the requests in flight; what is still in flight after it is cancelled upstream
   * and its client told.
   */
  async drain(graceMs: number, graceText: string): Promise<void> {
    if (this.phase === 'stopping') return;
    this.phase = 'stopping';
    clearTimeout(this.retry);
    const { http, sessions, log } = this.opts;
    http.close();
    let held = 0;
    for (const l of sessions.values()) held += l.session.restart();
    log.info({ sessions: sessions.size, inFlight: this.inFlight() - held, held, grace: graceText }, 'stopping: no new connections or requests; calls in flight may finish within shutdown.grace');
    const deadline = Date.now() + graceMs;
    while (this.inFlight() > 0 && Date.now() < deadline) {
      http.closeIdleConnections();
      await sleep(POLL_MS);
    }
    let cancelled = 0;
    for (const l of sessions.values()) cancelled += l.session.cancelInFlight(`the gateway is stopping and the request did not finish within shutdown.grace (${graceText})`);
    if (cancelled > 0) log.warn({ cancelled }, `stopping: ${cancelled} forwarded request(s) did not finish within shutdown.grace (${graceText}) and were cancelled upstream`);
  }
}

/**
 * Closes the listener and waits for its connections to end: idle keep-alive ones are closed as
 * they become idle; any still open after a short linger (a half-sent request) are closed.
 */
export async function closeListener(http: Server): Promise<void> {
  let done = false;
  const closed = new Promise<void>((resolve) => http.close(() => { done = true; resolve(); }));
  for (let waited = 0; !done && waited < LINGER_MS; waited += POLL_MS) {
    http.closeIdleConnections();
    await sleep(POLL_MS);
  }
  if (!done) http.closeAllConnections();
  await closed;
}
