import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { Logger } from '../log.js';
import type { PolicySession } from '../proxy/session.js';
import type { Grant } from '../state/types.js';
import { httpCarrier, type Telemetry } from '../telemetry/index.js';
import { serverNamed, type GatewayConfig, type ServerConfig } from '../config/gateway.js';
import type { ClientAuth } from './client-auth.js';
import type { EventBudget } from './event-budget.js';
import { HttpError } from '../http/errors.js';
import type { Lifecycle } from './lifecycle.js';
import type { Live, LiveSessions } from './live-sessions.js';
import { postSse, sseChannel } from './sse.js';
import { checkPostHeaders, isInitializeRequest, StreamableSession } from './streamable.js';
import { routeModern, type ModernSessions } from './modern.js';

export interface McpEndpointsOptions {
  config: () => GatewayConfig;
  sessions: Map<string, Live>;
  live: LiveSessions;
  lifecycle: Lifecycle;
  modern: ModernSessions;
  eventBudget: EventBudget;
  clientAuth: ClientAuth;
  /** The request's JSON body, within sessions.max_body. */
  readBody: (req: IncomingMessage) => Promise<unknown>;
  log: Logger;
  telemetry?: Telemetry;
}

/**
 * The gateway's MCP endpoints, /mcp/<server> (Streamable HTTP, and 2026-07-28 stateless
 * requests) and /sse/<server> (the legacy HTTP+SSE transport): each request is authenticated
 * for its server and reaches its session.
 */
export class McpEndpoints {
  constructor(private readonly opts: McpEndpointsOptions) {}

  /** Streamable HTTP: POST sends, GET opens the session's stream, DELETE ends the session. */
  async handleMcp(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    const { server, grant } = await this.serverAndGrant(req, name);
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'POST') checkPostHeaders(req);
    else if (req.method !== 'GET' && req.method !== 'DELETE') throw new HttpError(405, 'Method not allowed', { allow: 'GET, POST, DELETE' });
    if (typeof sid !== 'string') {
      if (req.method !== 'POST') throw new HttpError(400, 'Bad Request: Mcp-Session-Id header is required');
      const body = await this.opts.readBody(req);
      this.opts.lifecycle.admit(req.method, body);
      if (await routeModern(req, res, body, name, server, grant, this.opts.modern)) return; // MCP 2026-07-28: stateless
      const init = Array.isArray(body) ? body.find(isInitializeRequest) : isInitializeRequest(body) ? body : undefined;
      if (!init) throw new HttpError(400, 'Bad Request: Mcp-Session-Id header is required: start a session with initialize');
      const id = randomUUID();
      const streamable = (session: PolicySession) => new StreamableSession({
        sessionId: id,
        retryMs: 1000,
        maxEvents: 200,
        budget: this.opts.eventBudget,
        // The POST's traceparent is read only with telemetry on.
        onMessage: this.opts.telemetry ? (m, headers) => session.fromClient(m, httpCarrier(headers)) : (m) => session.fromClient(m),
        protocolVersion: () => session.protocolVersion,
        onClientGone: (requestId) => session.clientGone(requestId),
        onEnded: () => { const l = this.opts.sessions.get(id); if (l) void this.opts.live.close(l, 'the client ended the session'); },
      });
      const live = await this.opts.live.open(id, name, server, grant, streamable);
      try {
        (live.channel as StreamableSession).post(req, res, body);
      } catch (err) {
        void this.opts.live.close(live, 'its initialize request was refused');
        throw err;
      }
      return;
    }
    const live = this.opts.sessions.get(sid);
    const channel = live?.channel;
    if (!live || live.starting || !(channel instanceof StreamableSession) || live.server !== name) throw new HttpError(404, 'Session not found: start a new session with initialize');
    if (live.grant.id !== grant.id) throw new HttpError(403, 'this session belongs to another grant');
    if (!sameClaims(live.grant, grant)) throw new HttpError(404, CLAIMS_CHANGED);
    live.grant = grant; // the latest token's view of it (a JWT's expiry), for the check at release
    live.lastActive = Date.now();
    const body = req.method === 'POST' ? await this.opts.readBody(req) : undefined;
    this.opts.lifecycle.admit(req.method, body);
    if (req.method === 'POST') channel.post(req, res, body);
    else if (req.method === 'GET') channel.get(req, res);
    else channel.delete(res);
  }

  private async serverAndGrant(req: IncomingMessage, name: string): Promise<{ server: ServerConfig; grant: Grant }> {
    const server = serverNamed(this.opts.config(), name);
    if (!server) throw new HttpError(404, `no server named "${name}"`);
    return { server, grant: await this.opts.clientAuth.authenticate(req, name, server) };
  }

  /** The legacy HTTP+SSE transport: GET opens the event stream, POST …/messages?sessionId= sends. */
  async handleSse(req: IncomingMessage, res: ServerResponse, name: string, messages: boolean, url: URL): Promise<void> {
    const { server, grant } = await this.serverAndGrant(req, name);
    if (!messages) {
      if (req.method !== 'GET') throw new HttpError(405, 'open the SSE stream with GET');
      this.opts.lifecycle.admit(req.method);
      // The message endpoint sits under the stream's own path, whichever form the client used.
      const transport = new SSEServerTransport(`${url.pathname.replace(/\/$/, '')}/messages`, res);
      const live = await this.opts.live.open(transport.sessionId, name, server, grant, (session) => {
        transport.onmessage = this.opts.telemetry
          ? (m, extra) => session.fromClient(m, httpCarrier((extra?.requestInfo?.headers ?? {}) as IncomingHttpHeaders))
          : (m) => session.fromClient(m);
        return sseChannel(transport, this.opts.log);
      });
      live.sse = transport;
      res.on('close', () => void this.opts.live.close(live, 'the SSE stream closed'));
      await transport.start();
      return;
    }
    if (req.method !== 'POST') throw new HttpError(405, 'send messages with POST');
    const live = this.opts.sessions.get(url.searchParams.get('sessionId') ?? '');
    const transport = live?.sse;
    if (!live || live.starting || !transport || live.server !== name) throw new HttpError(404, 'Session not found: open /sse/<server> first');
    if (live.grant.id !== grant.id) throw new HttpError(403, 'this session belongs to another grant');
    if (!sameClaims(live.grant, grant)) throw new HttpError(404, CLAIMS_CHANGED);
    live.grant = grant; // the latest token's view of it (a JWT's expiry), for the check at release
    live.lastActive = Date.now();
    const body = await this.opts.readBody(req);
    this.opts.lifecycle.admit(req.method, body);
    await postSse(transport, live.session, req, res, body, this.opts.telemetry ? httpCarrier(req.headers) : undefined);
  }
}

const CLAIMS_CHANGED = 'Session not found: this token presents the grant with other label or tags than the token that opened the session (its decisions use those); start a new session with initialize';

/**
 * Whether a token presents the grant as the session knows it: a JWT grant's label and tags come
 * from the token's claims, and the session decides with those it opened with, so another token
 * of the same subject with other claims (narrower, or a group since removed) may not use it.
 */
function sameClaims(a: Pick<Grant, 'label' | 'tags'>, b: Pick<Grant, 'label' | 'tags'>): boolean {
  return a.label === b.label && JSON.stringify([...a.tags].sort()) === JSON.stringify([...b.tags].sort());
}
