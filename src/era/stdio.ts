/**
 * `toolgate run` for clients of either era on the same stdin/stdout. The first request decides:
 * one that carries a 2026-07-28 `_meta` envelope (or is `server/discover`, the spec's stdio
 * probe) makes the connection modern, anything else (initialize) legacy, as before. A legacy
 * connection is the policy session's own; a modern one goes through the ModernFront.
 */
import { errorResponse, INVALID_REQUEST, isObject, isValidId, PARSE_ERROR, type Json } from '../proxy/messages.js';
import { hasEnvelopeClaim, isRefusal, readEnvelope } from './envelope.js';
import { ModernFront } from './front.js';

export type ClientEra = 'legacy' | 'modern';

/** Whether a client's first message opens a modern connection. */
export function opensModern(message: unknown): boolean {
  return isObject(message) && typeof message.method === 'string' && Object.hasOwn(message, 'id')
    && (message.method === 'server/discover' || hasEnvelopeClaim(message.params));
}

export interface StdioEraOptions {
  front: ModernFront;
  /** The legacy path: the policy session's own line handling. */
  legacyLine(line: string): void;
  /** Told once, when the first request decides the era. */
  decided(era: ClientEra): void;
  write(message: Json): void;
}

export class StdioEras {
  era?: ClientEra;

  constructor(private readonly opts: StdioEraOptions) {}

  line(line: string): void {
    if (this.era === 'legacy') return this.opts.legacyLine(line);
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      if (this.era === undefined) return this.opts.legacyLine(line);
      this.opts.write(errorResponse(null, PARSE_ERROR, 'Parse error: the line is not valid JSON'));
      return;
    }
    if (this.era === undefined) {
      // Only a request decides; a stray notification before it goes the legacy way as before.
      const isRequest = isObject(message) && typeof message.method === 'string' && Object.hasOwn(message, 'id');
      if (!isRequest) return this.opts.legacyLine(line);
      this.era = opensModern(message) ? 'modern' : 'legacy';
      this.opts.decided(this.era);
      if (this.era === 'legacy') return this.opts.legacyLine(line);
    }
    this.modern(message);
  }

  private modern(message: unknown): void {
    const { front, write } = this.opts;
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      write(errorResponse(null, INVALID_REQUEST, Array.isArray(message) ? 'Invalid request: MCP 2026-07-28 has no batches' : 'Invalid request: expected a JSON-RPC 2.0 object'));
      return;
    }
    if (typeof message.method !== 'string') return; // an answer: a modern client is never asked anything
    if (!Object.hasOwn(message, 'id')) return front.notification(message);
    if (!isValidId(message.id)) {
      write(errorResponse(null, INVALID_REQUEST, 'Invalid request: id must be a string or a number'));
      return;
    }
    const envelope = readEnvelope(message.params);
    if (isRefusal(envelope)) {
      write({ jsonrpc: '2.0', id: message.id, error: envelope });
      return;
    }
    const exchange = { answer: write, notify: write };
    void front.request(message, envelope, exchange);
  }
}
