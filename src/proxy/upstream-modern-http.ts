import type { Logger } from 'pino';
import { maskUrlsIn } from '../secrets/credentials.js';
import { INTERNAL_ERROR, isObject, isValidId, type Id, type Json } from './messages.js';
import { withEra, type EraUpstream } from './upstream-modern.js';
import { isDerivedHeader, standardHeaders, ToolHeaders } from './upstream-modern-headers.js';
import type { UpstreamProtocol } from './upstream-modern-wire.js';
import { connectFailed, HttpUpstream } from './upstream-http.js';
import { NotDelivered, type Upstream } from './upstream.js';

export interface ModernHttpOptions {
  url: URL;
  /** The operator's headers (credentials); those toolgate derives from the body are not taken from here. */
  headers: Record<string, string>;
  log: Logger;
  /** Largest answer body read, in bytes (default 64 MiB, as for a stdio line). */
  maxBytes?: number;
}


/**
 * A 2026-07-28 server over Streamable HTTP: each request is one POST that carries the standard
 * headers made from its body (upstream-modern-headers.ts) and is answered by a JSON body or an
 * SSE stream of the request's own messages; a notification is one POST answered 202. There is
 * no session and no GET stream. An HTTP error answer becomes the request's JSON-RPC error (the
 * server's own code when it sent one, such as -32020 HeaderMismatch), so nothing hangs.
 */
export class ModernHttpUpstream implements Upstream {
  onmessage?: (message: unknown) => void;
  onclose?: (reason: string) => void;
  private readonly tools = new ToolHeaders();
  private readonly inflight = new Map<string, AbortController>();
  private closed = false;

  constructor(private readonly opts: ModernHttpOptions) {}

  async send(message: Json): Promise<void> {
    if (this.closed) throw new NotDelivered('the upstream connection is closed');
    const method = message.method;
    if (typeof method !== 'string') {
      // 2026-07-28 has no server-to-client requests over HTTP, so there is nothing to answer.
      this.opts.log.warn('dropped an answer to a server request: a 2026-07-28 HTTP server sends none');
      return;
    }
    const id = isValidId(message.id) ? message.id : undefined;
    if (method === 'notifications/cancelled' && isObject(message.params) && isValidId(message.params.requestId)) {
      this.inflight.get(JSON.stringify(message.params.requestId))?.abort();
    }
    const abort = new AbortController();
    const key = id === undefined ? undefined : JSON.stringify(id);
    if (key !== undefined) this.inflight.set(key, abort);
    let response: Response;
    try {
      response = await fetch(this.opts.url, { method: 'POST', headers: this.headersFor(message), body: JSON.stringify(message), signal: abort.signal });
    } catch (err) {
      if (key !== undefined) this.inflight.delete(key);
      const e = err as Error;
      const text = maskUrlsIn(e.message);
      throw connectFailed(e) ? new NotDelivered(text) : new Error(text);
    }
    // The answer is read after send resolves: the message was handed over.
    void this.answer(response, id, method, abort).finally(() => { if (key !== undefined && this.inflight.get(key) === abort) this.inflight.delete(key); });
  }

  private headersFor(message: Json): Headers {
    const headers = new Headers();
    for (const [name, value] of Object.entries(this.opts.headers)) if (!isDerivedHeader(name)) headers.set(name, value);
    headers.set('content-type', 'application/json');
    headers.set('accept', 'application/json, text/event-stream');
    for (const [name, value] of Object.entries(standardHeaders(message, this.tools))) headers.set(name, value);
    return headers;
  }

  private async answer(response: Response, id: Id | undefined, method: string, abort: AbortController): Promise<void> {
    const type = (response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    try {
      if (type === 'text/event-stream' && response.body) {
        await this.events(response.body, id, method);
      } else {
        const text = await this.text(response);
        let body: unknown;
        try { body = text === '' ? undefined : JSON.parse(text); } catch { body = undefined; }
        const messages = Array.isArray(body) ? body : body === undefined ? [] : [body];
        const own = messages.find((m) => isObject(m) && m.id === id);
        if (!response.ok && id !== undefined && !own) {
          const err = messages.find((m) => isObject(m) && isObject(m.error));
          const code = isObject(err) && isObject(err.error) && typeof err.error.code === 'number' ? err.error.code : INTERNAL_ERROR;
          const said = isObject(err) && isObject(err.error) && typeof err.error.message === 'string' ? `: ${err.error.message.slice(0, 300)}` : '';
          this.deliver({ jsonrpc: '2.0', id, error: { code, message: `The upstream answered HTTP ${response.status}${said}` } }, method, id);
          return;
        }
        if (!response.ok && id === undefined) this.opts.log.warn({ status: response.status, method }, 'the upstream refused a notification');
        for (const m of messages) this.deliver(m, method, id);
      }
    } catch (err) {
      if (abort.signal.aborted || this.closed) return;
      if (id !== undefined) this.deliver({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: `The upstream's answer could not be read: ${maskUrlsIn((err as Error).message)}` } }, method, id);
    }
  }

  /** The answer body as text, up to the size limit. */
  private async text(response: Response): Promise<string> {
    if (!response.body) return '';
    const max = this.opts.maxBytes ?? 64 * 1024 * 1024;
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.length;
      if (size > max) throw new Error(`the answer is over ${max} bytes`);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /** An SSE stream: each event's data is one JSON-RPC message. */
  private async events(body: ReadableStream<Uint8Array>, id: Id | undefined, method: string): Promise<void> {
    const max = this.opts.maxBytes ?? 64 * 1024 * 1024;
    const decoder = new TextDecoder();
    let buffer = '';
    let data: string[] = [];
    const line = (l: string) => {
      if (l === '') {
        if (data.length > 0) {
          try { this.deliver(JSON.parse(data.join('\n')), method, id); } catch { this.opts.log.warn('the upstream sent an SSE event that is not JSON; it was dropped'); }
        }
        data = [];
      } else if (l.startsWith('data:')) {
        data.push(l.slice(l.startsWith('data: ') ? 6 : 5));
      }
    };
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      if (buffer.length > max) throw new Error(`an SSE event is over ${max} bytes`);
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const end = buffer[nl] === '\r' && buffer[nl + 1] === '\n' ? nl + 2 : nl + 1;
        line(buffer.slice(0, nl));
        buffer = buffer.slice(end);
      }
    }
    line(buffer);
    line('');
  }

  /**
   * Passes a message on: the request's own answer (a tools/list answer teaches the tools' header
   * declarations first) or a notification about it. An answer carrying another id is dropped: one
   * POST answers one request, and a server must not settle some other request through it.
   */
  private deliver(message: unknown, method: string, id?: Id): void {
    if (!isObject(message)) return;
    if (!Object.hasOwn(message, 'method') && message.id !== id) {
      this.opts.log.warn({ method }, 'dropped an answer the upstream sent for another request id');
      return;
    }
    if (method === 'tools/list' && id !== undefined) this.tools.learn(message.result);
    this.onmessage?.(message);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const abort of this.inflight.values()) abort.abort();
    this.inflight.clear();
  }
}

/** The upstream for a Streamable HTTP server: 2025 only (`legacy`), or the era adapter over the modern transport with the legacy client as fallback. */
export function httpUpstream(protocol: UpstreamProtocol, url: URL, headers: Record<string, string>, log: Logger): EraUpstream {
  const legacy = () => new HttpUpstream({ url, headers, log });
  if (protocol === 'legacy') return withEra('legacy', legacy(), log);
  return withEra(protocol, new ModernHttpUpstream({ url, headers, log }), log, { legacy });
}
