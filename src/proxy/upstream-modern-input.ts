import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { idKey, INTERNAL_ERROR, isObject, isValidId, type Id, type Json } from './messages.js';
import { inputRequiredRefusal } from './upstream-modern-wire.js';

/** Rounds of input one request may go through before toolgate gives up on it. */
const MAX_ROUNDS = 8;
/** Questions one round may ask: a server cannot flood the client with requests. */
const MAX_INPUTS = 16;

/** The client capability each kind of input request needs (the 2025 server-to-client requests). */
function clientCan(method: string, params: unknown, caps: Json): boolean {
  if (method === 'sampling/createMessage') return isObject(caps.sampling);
  if (method === 'roots/list') return isObject(caps.roots);
  if (method !== 'elicitation/create' || !isObject(caps.elicitation)) return false;
  const url = isObject(params) && params.mode === 'url';
  // An empty elicitation capability means form mode only (2025-11-25).
  return url ? isObject(caps.elicitation.url) : Object.keys(caps.elicitation).length === 0 || isObject(caps.elicitation.form);
}

interface Request {
  /** The request as the session sent it (what was judged), retried with the answers. */
  message: Json;
  rounds: number;
  /** The questions of the current round, by the id toolgate asked the client with. */
  asking: Map<string, string>;
  answers: Json;
  requestState?: string;
}

export interface InputRoundsOptions {
  /** To the session, as a server request (or, for a failure, the request's error). */
  toClient(message: Json): void;
  /** Sends the retried request to the server (enveloped by the caller). */
  retry(message: Json): Promise<void>;
  /** The capabilities the client declared in its initialize. */
  capabilities(): Json;
  log: Logger;
}

/**
 * A 2025 client cannot answer a 2026-07-28 `input_required` result, but it can answer the same
 * questions asked the 2025 way: each input request becomes a server-to-client request
 * (elicitation, sampling, roots) through the session, and once all are answered the request is
 * sent again — the same request, the same name and arguments as were judged — with the answers
 * in `inputResponses` and the server's `requestState`. The session sees one request and one
 * answer, so the call is decided, charged and audited once. A question the client declared no
 * capability for, an error answer, or too many rounds end the request with an error.
 */
export class InputRounds {
  private readonly requests = new Map<string, Request>();
  private readonly asked = new Map<string, string>();

  constructor(private readonly opts: InputRoundsOptions) {}

  /** A legacy client's request on its way to the server. */
  sent(message: Json): void {
    if (!isValidId(message.id)) return;
    const key = idKey(message.id);
    if (!this.requests.has(key)) this.requests.set(key, { message, rounds: 0, asking: new Map(), answers: {} });
  }

  /** Its final answer came (or it was cancelled): forgotten. */
  done(id: Id): void {
    const request = this.requests.get(idKey(id));
    if (!request) return;
    for (const asked of request.asking.keys()) this.asked.delete(asked);
    this.requests.delete(idKey(id));
  }

  /**
   * An input_required answer to a legacy client's request: the client is asked (undefined), or
   * the message to give the session instead (an error) when it cannot be.
   */
  inputRequired(answer: Json): Json | undefined {
    const id = answer.id as Id;
    const request = this.requests.get(idKey(id));
    const result = answer.result as Json;
    const inputs = isObject(result.inputRequests) ? Object.entries(result.inputRequests) : [];
    const caps = this.opts.capabilities();
    const askable = inputs.length > 0 && inputs.length <= MAX_INPUTS && inputs.every(([, r]) => isObject(r) && typeof r.method === 'string' && clientCan(r.method, r.params, caps));
    if (!request || !askable || request.rounds >= MAX_ROUNDS) {
      this.done(id);
      if (request && request.rounds >= MAX_ROUNDS) this.opts.log.warn(`the upstream asked for input ${MAX_ROUNDS} times for one request; it was ended`);
      return inputRequiredRefusal(id, result);
    }
    request.rounds++;
    request.answers = {};
    request.requestState = typeof result.requestState === 'string' ? result.requestState : undefined;
    for (const [name, input] of inputs) {
      const r = input as Json;
      const askId = `toolgate-input-${randomUUID()}`;
      request.asking.set(askId, name);
      this.asked.set(askId, idKey(id));
      this.opts.toClient({ jsonrpc: '2.0', id: askId, method: r.method, ...(r.params === undefined ? {} : { params: r.params }) });
    }
    return undefined;
  }

  /** A client's answer: true when it answers one of toolgate's questions (and is used here). */
  answered(message: Json): boolean {
    if (typeof message.id !== 'string' || !this.asked.has(message.id)) return false;
    const key = this.asked.get(message.id)!;
    this.asked.delete(message.id);
    const request = this.requests.get(key);
    const name = request?.asking.get(message.id);
    if (!request || name === undefined) return true;
    request.asking.delete(message.id);
    const id = request.message.id as Id;
    if (!isObject(message.result)) {
      this.done(id);
      const e = isObject(message.error) ? message.error : {};
      const said = typeof e.message === 'string' ? `: ${e.message.slice(0, 200)}` : '';
      this.opts.toClient({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `The client did not answer the upstream server's input request${said}; the request did not complete.` } });
      return true;
    }
    request.answers[name] = message.result;
    if (request.asking.size > 0) return true;
    const params = isObject(request.message.params) ? request.message.params : {};
    const retry = { ...request.message, params: { ...params, inputResponses: request.answers, ...(request.requestState !== undefined ? { requestState: request.requestState } : {}) } };
    this.opts.retry(retry).catch((err: Error) => {
      this.done(id);
      this.opts.toClient({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `The upstream MCP server could not be reached: ${err.message}` } });
    });
    return true;
  }
}
