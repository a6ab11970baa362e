import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { maskUrlsIn } from '../secrets/credentials.js';
import type { Json } from './messages.js';
import { NotDelivered, type Upstream } from './upstream.js';

export interface HttpUpstreamOptions {
  url: URL;
  headers: Record<string, string>;
  log: Logger;
}

/** Failures before any byte of the request left (no connection, TLS refused). */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * True when the error (or its cause) carries a system or TLS code that says no connection was
 * made. Only a string code counts: errors of the SDK and of MCP carry numeric codes (an HTTP
 * status, a JSON-RPC code) that say nothing about whether the request left.
 */
export function connectFailed(err: Error): boolean {
  const code = (err.cause as { code?: unknown } | undefined)?.code ?? (err as { code?: unknown }).code;
  return typeof code === 'string' && (CONNECT_FAILURES.has(code) || code.startsWith('ERR_TLS') || code.includes('CERT'));
}

/**
 * True when the error says the server never got the message: the connection was never made, or
 * the server refused the request with a 4xx status. A reset, a 5xx or an unreadable answer mean
 * it may have run it.
 */
function neverArrived(err: Error): boolean {
  if (err instanceof StreamableHTTPError) return err.code !== undefined && err.code >= 400 && err.code < 500;
  if (err.message === 'Not connected') return true;
  return connectFailed(err);
}

/**
 * A remote MCP server over Streamable HTTP, falling back to the legacy SSE transport when the
 * first POST is refused with 404 or 405 (the backwards-compatibility rule of the MCP spec).
 * Uses the SDK's client transports; messages are passed through as parsed.
 */
export class HttpUpstream implements Upstream {
  onmessage?: (message: unknown) => void;
  onclose?: (reason: string) => void;
  private transport: Transport;
  private queue: Promise<void> = Promise.resolve();
  private first = true;
  private closing = false;
  /** The id of the client's initialize request, to learn the negotiated protocol version from its answer. */
  private initializeId?: unknown;

  constructor(private readonly opts: HttpUpstreamOptions) {
    this.transport = this.attach(new StreamableHTTPClientTransport(opts.url, { requestInit: { headers: opts.headers } }));
  }

  private attach(t: Transport): Transport {
    t.onmessage = (m) => {
      if (this.initializeId !== undefined && 'id' in m && m.id === this.initializeId && 'result' in m) this.negotiated(m.result.protocolVersion);
      this.onmessage?.(m);
    };
    t.onerror = (err) => this.opts.log.warn({ err: maskUrlsIn(err.message) }, 'upstream transport error');
    t.onclose = () => { if (!this.closing) this.onclose?.('the connection to the upstream server closed'); };
    return t;
  }

  /** Later requests carry the negotiated version in MCP-Protocol-Version, as the spec requires of HTTP clients. */
  private negotiated(version: unknown): void {
    this.initializeId = undefined;
    const t = this.transport as Transport & { setProtocolVersion?: (v: string) => void };
    if (typeof version === 'string') t.setProtocolVersion?.(version);
  }

  /** Sends in order; rejects with NotDelivered when the message certainly did not reach the server. */
  send(message: Json): Promise<void> {
    if (message.method === 'initialize' && message.id !== undefined) this.initializeId = message.id;
    const sent = this.queue.then(() => this.deliver(message)).catch((err: Error) => {
      err.message = maskUrlsIn(err.message); // a URL's userinfo and query values are credentials
      throw neverArrived(err) ? new NotDelivered(err.message) : err;
    });
    this.queue = sent.catch(() => {});
    return sent;
  }

  private async deliver(message: Json): Promise<void> {
    if (!this.first) return this.transport.send(message as JSONRPCMessage);
    this.first = false;
    try {
      await this.transport.start();
      await this.transport.send(message as JSONRPCMessage);
    } catch (err) {
      if (!(err instanceof StreamableHTTPError) || (err.code !== 404 && err.code !== 405)) throw err;
      this.opts.log.info('the upstream refused Streamable HTTP; trying the legacy SSE transport');
      this.transport.onclose = undefined;
      await this.transport.close().catch(() => {});
      this.transport = this.attach(new SSEClientTransport(this.opts.url, { requestInit: { headers: this.opts.headers } }));
      await this.transport.start();
      await this.transport.send(message as JSONRPCMessage);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const t = this.transport as Transport & { terminateSession?: () => Promise<void> };
    await t.terminateSession?.().catch(() => {});
    await t.close().catch(() => {});
  }
}
