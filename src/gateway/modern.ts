/**
 * Streamable HTTP for MCP 2026-07-28 clients: stateless POSTs without Mcp-Session-Id, on the same
 * URLs as legacy sessions. Each POST is authenticated (the grant is checked on every request),
 * its headers are checked against its body before anything is decided or forwarded
 * (src/era/headers.ts), and it is carried on the internal policy session toolgate keeps for its
 * grant and server (ModernSessions: one policy session per grant and server, whose requests each
 * lease a pooled upstream session: src/pool/).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Refusal } from '../era/envelope.js';
import { checkModernPost, isModernPost } from '../era/headers.js';
import { paramDeclarations, paramHeaderRefusal } from '../era/param-headers.js';
import { ModernFront, type ModernExchange } from '../era/front.js';
import { httpStatusForError } from '../era/versions.js';
import type { Logger } from '../log.js';
import type { PolicySession } from '../proxy/session.js';
import { INVALID_REQUEST, isObject, isValidId, type Id, type Json } from '../proxy/messages.js';
import type { Grant } from '../state/types.js';
import type { ServerConfig } from '../config/gateway.js';
import { HttpError } from '../http/errors.js';
import type { Live, LiveSessions } from './live-sessions.js';
import type { ClientChannel } from './streamable.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' };
const KEEP_ALIVE_MS = 15_000;

/** One POST's answer: plain JSON, or an SSE stream once the server sends anything about it first. */
export class HttpExchange implements ModernExchange {
  private streaming = false;
  private keepAlive?: NodeJS.Timeout;
  done = false;
  gone = false;

  constructor(private readonly res: ServerResponse, private readonly req?: IncomingMessage) {}

  paramHeaders(inputSchema: unknown, args: unknown): Refusal | undefined {
    return this.req ? paramHeaderRefusal(this.req, paramDeclarations(inputSchema), args) : undefined;
  }

  refuse(id: Id, refusal: Refusal): void {
    if (this.done || this.res.headersSent) return this.answer({ jsonrpc: '2.0', id, error: refusal });
    this.done = true;
    this.res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, error: refusal }));
  }

  answer(message: Json): void {
    if (this.done) return;
    this.done = true;
    clearInterval(this.keepAlive);
    const text = JSON.stringify(message);
    if (this.streaming) {
      this.res.end(`event: message\ndata: ${text}\n\n`);
      return;
    }
    if (this.res.writableEnded) return;
    const error = isObject(message) && isObject(message.error) ? message.error : undefined;
    this.res.writeHead(error ? httpStatusForError(error.code) : 200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }).end(text);
  }

  notify(message: Json): void {
    if (this.done || this.res.writableEnded) return;
    if (!this.streaming) {
      this.streaming = true;
      this.res.writeHead(200, SSE_HEADERS);
      this.keepAlive = setInterval(() => { if (!this.res.writableEnded) this.res.write(': keep-alive\n\n'); }, KEEP_ALIVE_MS);
      this.keepAlive.unref();
    }
    this.res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  stop(): void {
    clearInterval(this.keepAlive);
  }
}

/** The internal policy sessions modern clients' requests ride on, by grant and server (their upstream is a pool: src/pool/). */
export interface ModernSessions {
  lease(name: string, server: ServerConfig, grant: Grant): Promise<ModernFront>;
}

export interface ModernHttpOptions {
  log: Logger;
  /** Where internal sessions are opened (with the client era `modern`), admitted under the same caps as any. */
  live: Pick<LiveSessions, 'open'>;
  /** Whether this live session is still open (not closed, reaped or evicted). */
  isOpen(live: Live): boolean;
}

/** One internal session per grant (as its token presents it: label and tags) and server, opened on the first request and again after it closed. */
export class PerGrantSessions implements ModernSessions {
  private readonly byKey = new Map<string, Promise<{ live: Live; front: ModernFront }>>();

  constructor(private readonly opts: ModernHttpOptions) {}

  async lease(name: string, server: ServerConfig, grant: Grant): Promise<ModernFront> {
    // The grant as this token presents it: a JWT grant's label and tags come from its claims, and a
    // session's decisions use those it opened with, so another token of the same subject with
    // other claims (narrower, or a group since removed) gets its own session, never this one's view.
    const key = JSON.stringify([grant.id, name, grant.label, [...grant.tags].sort()]);
    const existing = this.byKey.get(key);
    if (existing) {
      const got = await existing.catch(() => undefined);
      if (got && this.opts.isOpen(got.live)) {
        got.live.grant = grant; // the latest token's view of it (a JWT's expiry), for the check at release
        got.live.lastActive = Date.now();
        return got.front;
      }
      if (this.byKey.get(key) === existing) this.byKey.delete(key);
      return this.lease(name, server, grant);
    }
    const front = new ModernFront({ serverName: name, log: this.opts.log, passthroughMethods: server.passthrough_methods });
    const channelFor = (session: PolicySession): ClientChannel => {
      front.attach(session);
      // An open listen stream keeps the internal session (its upstream sends the changes).
      return { send: (m) => front.fromSession(m), close: () => front.closed('the session was closed'), busy: () => front.subscriptions.size > 0 };
    };
    const opening = this.opts.live.open(`modern-${randomUUID()}`, name, server, grant, channelFor, 'modern').then((live) => ({ live, front }));
    this.byKey.set(key, opening);
    try {
      return (await opening).front;
    } catch (err) {
      if (this.byKey.get(key) === opening) this.byKey.delete(key);
      throw err;
    }
  }
}

/**
 * A POST without Mcp-Session-Id (its grant authenticated, its body read): true when it was a
 * 2026-07-28 message and was handled here; false for the legacy path (initialize).
 */
export async function routeModern(req: IncomingMessage, res: ServerResponse, body: unknown, name: string, server: ServerConfig, grant: Grant, sessions: ModernSessions): Promise<boolean> {
  if (Array.isArray(body) && body.some((m) => isModernPost(req, m))) throw new HttpError(400, 'Invalid Request: JSON-RPC batches may not contain MCP 2026-07-28 requests', {}, INVALID_REQUEST);
  if (!isModernPost(req, body)) return false;
  await postModern(req, res, body, name, server, grant, sessions);
  return true;
}

/**
 * A modern POST (its grant authenticated, its body read): refused with an HTTP status when its
 * envelope or headers are wrong, else carried on the grant's internal session.
 */
export async function postModern(req: IncomingMessage, res: ServerResponse, body: unknown, name: string, server: ServerConfig, grant: Grant, sessions: ModernSessions): Promise<void> {
  if (!isObject(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string' || (Object.hasOwn(body, 'id') && !isValidId(body.id))) {
    throw new HttpError(400, 'Invalid Request: a 2026-07-28 POST carries one JSON-RPC request or notification', {}, INVALID_REQUEST);
  }
  const id = Object.hasOwn(body, 'id') ? body.id as string | number : undefined;
  const checked = checkModernPost(req, body);
  if ('refusal' in checked) {
    const text = JSON.stringify({ jsonrpc: '2.0', id: id ?? null, error: checked.refusal });
    res.writeHead(checked.status, { 'content-type': 'application/json' }).end(text);
    return;
  }
  const front = await sessions.lease(name, server, grant);
  if (id === undefined) {
    res.writeHead(202).end();
    // Over HTTP a request (or a listen) is cancelled by closing its stream: stateless clients'
    // ids are not unique, so a notifications/cancelled cannot say whose request it means.
    if (body.method !== 'notifications/cancelled') front.notification(body);
    return;
  }
  const exchange = new HttpExchange(res, req);
  res.on('close', () => {
    exchange.stop();
    if (exchange.done) return;
    exchange.gone = true;
    front.gone(exchange);
  });
  await front.request(body, checked.envelope!, exchange);
}
