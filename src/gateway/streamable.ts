import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import contentType from 'content-type';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { batchRefusal } from '../proxy/batches.js';
import { idKey, isObject, isValidId, type Id, type Json } from '../proxy/messages.js';
import { EventBudget, type EventHolder } from './event-budget.js';
import { HttpError } from '../http/errors.js';

/** What the gateway's sessions deliver to their client, whatever the HTTP transport. */
export interface ClientChannel {
  /** `raw`: the message's exact JSON text when it came from the server unchanged. */
  send(message: Json, raw: string | undefined, related: Id | undefined): void;
  /** A batch was accepted: a channel that answers batches as one message collects the answers of its requests. */
  expectBatch?(batch: unknown[]): void;
  close(): void | Promise<void>;
  /** Something is open that idling must not end (a modern client's subscriptions/listen stream). */
  busy?(): boolean;
}

export interface StreamableOptions {
  sessionId: string;
  /** The SSE `retry` a client waits before reconnecting a dropped stream. */
  retryMs: number;
  /** SSE events kept for clients that resume with Last-Event-ID, at most (also bounded in bytes by `budget`). */
  maxEvents: number;
  /** Bytes of kept events, per session and across sessions; default: this session's own 1 MB budget. */
  budget?: EventBudget;
  /**
   * An answer held this long becomes an SSE stream, and open streams get a comment this often,
   * so that a slow call keeps its connection alive through proxies that close silent ones.
   */
  holdMs?: number;
  keepAliveMs?: number;
  /** A message from the client, with the headers of the POST that carried it. */
  onMessage(message: Json, headers: IncomingHttpHeaders): void;
  /** The session's negotiated protocol version, which decides whether a batch is accepted. */
  protocolVersion?(): string | undefined;
  /** The client hung up before the answer to this request. */
  onClientGone(id: Id): void;
  /** The client ended the session (HTTP DELETE). */
  onEnded(): void;
}

/** One POST that carried requests: answered as JSON, or as an SSE stream once the server sends anything else first. */
interface Exchange {
  res: ServerResponse;
  ids: Id[];
  /** Answers by request key, kept in request order for a JSON batch. */
  answers: Map<string, string | undefined>;
  unanswered: number;
  stream?: string;
  /** When the POST came, then when its stream was last written to. */
  touched: number;
}

const STANDALONE = 'get';

interface Kept { stream: string; seq: number; text?: string; bytes: number }

/** The stream and sequence number of an event id this session gave out (`s3_7`, `get_9`). */
function parseEventId(id: string): { stream: string; seq: number } | undefined {
  const m = /^(get|s\d+)_(\d+)$/.exec(id);
  return m ? { stream: m[1], seq: Number(m[2]) } : undefined;
}

export function isInitializeRequest(m: unknown): boolean {
  return isObject(m) && m.method === 'initialize' && Object.hasOwn(m, 'id');
}

function isMessage(m: unknown): m is Json {
  if (!isObject(m) || m.jsonrpc !== '2.0') return false;
  if (typeof m.method === 'string') return !Object.hasOwn(m, 'id') || isValidId(m.id);
  return isValidId(m.id) && (Object.hasOwn(m, 'result') || Object.hasOwn(m, 'error'));
}

function isRequest(m: Json): boolean {
  return typeof m.method === 'string' && Object.hasOwn(m, 'id');
}

/** Checks a POST before its body is read. */
export function checkPostHeaders(req: IncomingMessage): void {
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    throw new HttpError(406, 'Not Acceptable: Client must accept both application/json and text/event-stream');
  }
}

/** The last Content-Type header that parsed as JSON: a client sends the same one with every request. */
let jsonType: string | undefined;

/** Every request body is JSON: the media type is parsed, so a parameter that mentions JSON does not pass. */
export function checkContentType(req: IncomingMessage): void {
  const header = req.headers['content-type'];
  if (header !== undefined && header === jsonType) return;
  let type: string | undefined;
  try { type = contentType.parse(req).type; } catch { /* missing or malformed */ }
  if (type !== 'application/json') throw new HttpError(415, 'Unsupported Media Type: Content-Type must be application/json');
  jsonType = header;
}

/**
 * The server side of one Streamable HTTP session (MCP 2025-03-26 and later). A POST's answer is
 * held until the server's first message about it: if that is the answer, it goes back as plain
 * JSON in one write; if the server first sends progress, a log message or a request of its own,
 * the answer becomes an SSE stream (with a priming event for clients that can resume). Server
 * messages about no request go to the GET stream. SSE events are kept for Last-Event-ID only while
 * a reconnect can still ask for them: a request stream's events go once its last answer was
 * written and the response ended, the GET stream's once the client resumes after them; the rest
 * is bounded by count and by bytes (per session and across sessions, see EventBudget).
 */
export class StreamableSession implements ClientChannel, EventHolder {
  private readonly exchanges = new Map<string, Exchange>();
  private readonly events = new Map<string, Kept>();
  private bytes = 0;
  private readonly budget: EventBudget;
  private standalone?: ServerResponse;
  private protocolVersion = '2025-03-26';
  private seq = 0;
  private initialized = false;
  private closed = false;
  private readonly headers: Record<string, string>;
  private readonly sseHeaders: Record<string, string>;
  private heartbeat?: NodeJS.Timeout;
  private standaloneTouched = 0;
  private readonly holdMs: number;
  private readonly keepAliveMs: number;

  constructor(private readonly opts: StreamableOptions) {
    this.headers = { 'mcp-session-id': opts.sessionId };
    this.sseHeaders = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', ...this.headers };
    this.holdMs = opts.holdMs ?? 2_000;
    this.keepAliveMs = opts.keepAliveMs ?? 15_000;
    this.budget = opts.budget ?? new EventBudget(1024 * 1024, 1024 * 1024);
  }

  get bufferedBytes(): number {
    return this.bytes;
  }

  /** Events kept for resumption (bookkeeping, for metrics and tests). */
  get bufferedEvents(): number {
    return this.events.size;
  }

  /** A POST whose headers passed `checkPostHeaders`, with its parsed body. */
  post(req: IncomingMessage, res: ServerResponse, body: unknown): void {
    const refusal = Array.isArray(body) ? batchRefusal(body, this.opts.protocolVersion?.()) : null;
    if (refusal) throw new HttpError(400, refusal, {}, -32600);
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length === 0 || !messages.every(isMessage)) throw new HttpError(400, 'Parse error: Invalid JSON-RPC message', {}, -32700);
    const init = messages.find(isInitializeRequest);
    if (init) {
      if (messages.length > 1) throw new HttpError(400, 'Invalid Request: Only one initialization request is allowed', {}, -32600);
      if (this.initialized) throw new HttpError(400, 'Invalid Request: Server already initialized', {}, -32600);
      const version = isObject(init.params) ? init.params.protocolVersion : undefined;
      if (typeof version === 'string') this.protocolVersion = version;
      this.initialized = true;
    } else {
      this.checkProtocolVersion(req);
    }
    const requests = messages.filter(isRequest);
    if (requests.length === 0) {
      res.writeHead(202, this.headers).end();
      for (const m of messages) this.opts.onMessage(m, req.headers);
      return;
    }
    const keys = requests.map((m) => idKey(m.id as Id));
    if (keys.some((k, i) => this.exchanges.has(k) || keys.indexOf(k) !== i)) {
      throw new HttpError(400, 'Invalid Request: a request id is already in use by a request in flight', {}, -32600);
    }
    const ex: Exchange = { res, ids: requests.map((m) => m.id as Id), answers: new Map(keys.map((k) => [k, undefined])), unanswered: keys.length, touched: Date.now() };
    for (const k of keys) this.exchanges.set(k, ex);
    this.beat();
    res.on('close', () => this.hungUp(ex, res));
    for (const m of messages) this.opts.onMessage(m, req.headers);
  }

  /** GET: the session's own SSE stream, or the rest of a dropped stream after Last-Event-ID. */
  get(req: IncomingMessage, res: ServerResponse): void {
    if (!(req.headers.accept ?? '').includes('text/event-stream')) throw new HttpError(406, 'Not Acceptable: Client must accept text/event-stream');
    this.checkProtocolVersion(req);
    const last = req.headers['last-event-id'];
    const resumed = typeof last === 'string' ? parseEventId(last) : undefined;
    if (resumed && resumed.seq <= this.seq) return this.resume(resumed.seq, resumed.stream, res);
    if (this.standalone) throw new HttpError(409, 'Conflict: Only one SSE stream is allowed per session');
    this.openStream(res, STANDALONE);
    this.standalone = res;
    this.standaloneTouched = Date.now();
    this.beat();
    res.on('close', () => { if (this.standalone === res) this.standalone = undefined; });
  }

  /** A GET stream is open: the client is still there even when it sends nothing. */
  get streaming(): boolean {
    return this.standalone !== undefined;
  }

  /** DELETE: the client ends the session. */
  delete(res: ServerResponse): void {
    res.writeHead(200, this.headers).end();
    this.opts.onEnded();
  }

  send(message: Json, raw: string | undefined, related: Id | undefined): void {
    if (this.closed) return;
    // A raw line may hold a carriage return between tokens, which would end an SSE line early.
    const text = raw !== undefined && !raw.includes('\r') ? raw : JSON.stringify(message);
    if (!Object.hasOwn(message, 'method')) {
      const key = isValidId(message.id) ? idKey(message.id) : '';
      const ex = this.exchanges.get(key);
      if (ex) this.answer(ex, key, text);
      return;
    }
    const ex = related === undefined ? undefined : this.exchanges.get(idKey(related));
    if (ex) {
      this.stream(ex);
      this.write(ex.res, this.store(ex.stream!, text), text);
      return;
    }
    const eventId = this.store(STANDALONE, text);
    if (this.standalone) this.write(this.standalone, eventId, text);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const id of [...this.events.keys()]) this.drop(id);
    this.budget.gone(this);
    this.standalone?.end();
    for (const ex of new Set(this.exchanges.values())) {
      if (ex.res.headersSent) ex.res.end();
      else ex.res.writeHead(503, { 'content-type': 'application/json', ...this.headers }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'the session was closed' } }));
    }
    this.exchanges.clear();
  }

  /** Runs while anything is open: held answers become streams, quiet streams get a keep-alive comment. */
  private beat(): void {
    if (this.heartbeat) return;
    const tick = Math.min(this.holdMs, this.keepAliveMs) / 4;
    this.heartbeat = setInterval(() => {
      const now = Date.now();
      const open = new Set(this.exchanges.values());
      for (const ex of open) {
        if (ex.stream === undefined) {
          if (now - ex.touched >= this.holdMs) { this.stream(ex); ex.touched = now; }
        } else if (now - ex.touched >= this.keepAliveMs && !ex.res.writableEnded) {
          ex.res.write(': keep-alive\n\n');
          ex.touched = now;
        }
      }
      if (this.standalone && now - this.standaloneTouched >= this.keepAliveMs) {
        this.standalone.write(': keep-alive\n\n');
        this.standaloneTouched = now;
      }
      if (open.size === 0 && !this.standalone) {
        clearInterval(this.heartbeat);
        this.heartbeat = undefined;
      }
    }, tick);
    this.heartbeat.unref();
  }

  private checkProtocolVersion(req: IncomingMessage): void {
    const v = req.headers['mcp-protocol-version'];
    if (typeof v === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(v)) {
      throw new HttpError(400, `Bad Request: Unsupported protocol version: ${v} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);
    }
  }

  private answer(ex: Exchange, key: string, text: string): void {
    this.exchanges.delete(key);
    ex.unanswered--;
    if (ex.stream !== undefined) {
      this.write(ex.res, this.store(ex.stream, text), text);
      if (ex.unanswered === 0) ex.res.end();
      return;
    }
    ex.answers.set(key, text);
    if (ex.unanswered > 0) return;
    const answers = [...ex.answers.values()] as string[];
    const body = ex.ids.length === 1 && answers.length === 1 ? answers[0] : `[${answers.join(',')}]`;
    // With its length the answer goes out in one write, header and body, not as chunks.
    ex.res.writeHead(200, ['content-type', 'application/json', 'mcp-session-id', this.opts.sessionId, 'content-length', String(Buffer.byteLength(body))]);
    ex.res.end(body);
  }

  /** Turns a held answer into an SSE stream; answers already in (a batch) go first. */
  private stream(ex: Exchange): void {
    if (ex.stream !== undefined) return;
    ex.stream = `s${++this.seq}`;
    this.openStream(ex.res, ex.stream);
    this.forgetWhenDelivered(ex, ex.res);
    for (const text of ex.answers.values()) if (text !== undefined) this.write(ex.res, this.store(ex.stream, text), text);
  }

  private openStream(res: ServerResponse, stream: string): void {
    res.writeHead(200, this.sseHeaders);
    // Clients from 2025-11-25 on understand an empty event that only carries an id and a retry time.
    if (this.protocolVersion >= '2025-11-25') res.write(`id: ${this.store(stream)}\nretry: ${this.opts.retryMs}\ndata: \n\n`);
    else res.flushHeaders();
  }

  private store(stream: string, text?: string): string {
    const seq = ++this.seq;
    const id = `${stream}_${seq}`;
    const bytes = text === undefined ? 0 : Buffer.byteLength(text);
    this.events.set(id, { stream, seq, text, bytes });
    this.bytes += bytes;
    // Past the shared budget the largest holder gives up its oldest events; past its own, this session does.
    this.budget.added(this, bytes);
    while (this.events.size > this.opts.maxEvents || this.bytes > this.budget.perSession) this.evictOldest();
    return id;
  }

  evictOldest(): boolean {
    const oldest = this.events.keys().next();
    if (oldest.done) return false;
    this.drop(oldest.value);
    return true;
  }

  private drop(id: string): void {
    const e = this.events.get(id);
    if (!e) return;
    this.events.delete(id);
    this.bytes -= e.bytes;
    this.budget.removed(e.bytes);
  }

  /** Events of this stream, or of the GET stream up to `seq`: nobody can ask for them again. */
  private forget(stream: string, upTo = Infinity): void {
    for (const [id, e] of this.events) if (e.stream === stream && e.seq <= upTo) this.drop(id);
  }

  /** Once a request stream's last answer has gone out and its response ended, its events are delivered. */
  private forgetWhenDelivered(ex: Exchange, res: ServerResponse): void {
    res.once('finish', () => { if (ex.unanswered === 0 && ex.stream !== undefined) this.forget(ex.stream); });
  }

  private write(res: ServerResponse, eventId: string, text: string): void {
    if (!res.writableEnded) res.write(`event: message\nid: ${eventId}\ndata: ${text}\n\n`);
    if (res === this.standalone) this.standaloneTouched = Date.now();
  }

  /** Replays a stream's events after `lastSeq`; the stream continues here if it is still open. */
  private resume(lastSeq: number, stream: string, res: ServerResponse): void {
    const ex = stream === STANDALONE ? undefined : [...this.exchanges.values()].find((e) => e.stream === stream);
    res.writeHead(200, this.sseHeaders);
    for (const [id, e] of this.events) {
      if (e.seq > lastSeq && e.stream === stream && e.text !== undefined) this.write(res, id, e.text);
    }
    if (stream === STANDALONE) {
      // The client has everything up to lastSeq.
      this.forget(STANDALONE, lastSeq);
      this.standalone?.end();
      this.standalone = res;
      res.on('close', () => { if (this.standalone === res) this.standalone = undefined; });
    } else if (ex) {
      const old = ex.res;
      ex.res = res;
      old.end();
      this.forgetWhenDelivered(ex, res);
      res.on('close', () => this.hungUp(ex, res));
    } else {
      // A finished stream, replayed: nothing more will come on it.
      res.once('finish', () => this.forget(stream));
      res.end();
    }
  }

  /** The client went away before every answer of this POST was sent: those calls are cancelled. */
  private hungUp(ex: Exchange, res: ServerResponse): void {
    if (this.closed || ex.unanswered === 0 || res !== ex.res) return;
    for (const id of ex.ids) {
      const key = idKey(id);
      if (this.exchanges.get(key) !== ex) continue;
      this.exchanges.delete(key);
      this.opts.onClientGone(id);
    }
  }
}
