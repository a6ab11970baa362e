import { randomUUID } from 'node:crypto';
import { idKey, INTERNAL_ERROR, type Id, type Json } from './messages.js';

/**
 * Requests toolgate itself sends (its own tools/list upstream, elicitation to the client), by id
 * key. Only the side a request was sent to may answer it: a client must not be able to feed
 * toolgate a tool list, nor a server approve its own call.
 */
export class OwnRequests {
  private readonly own = new Map<string, { to: 'client' | 'server'; resolve(message: Json): void; related?: Id }>();
  private seq = 0;
  private readonly prefix = `toolgate-${randomUUID().slice(0, 8)}-`;

  constructor(private readonly send: { toClient(message: Json): void; toServer(message: Json): void }) {}

  /** Sends a request of toolgate's own to the server or the client and resolves with its answer. */
  request(method: string, params: Json, to: 'client' | 'server', related?: Id, timeoutMs?: number): Promise<Json> {
    const id = `${this.prefix}${++this.seq}`;
    const key = idKey(id);
    return new Promise<Json>((resolve, reject) => {
      const timer = timeoutMs ? setTimeout(() => { this.own.delete(key); reject(new Error(`no answer to ${method}`)); }, timeoutMs) : undefined;
      timer?.unref();
      this.own.set(key, { to, resolve: (m) => { clearTimeout(timer); resolve(m); }, related });
      const message = { jsonrpc: '2.0', id, method, params };
      if (to === 'client') this.send.toClient(message);
      else this.send.toServer(message);
    });
  }

  /** True when `message` answered one of these requests, from the side it was sent to (it is then consumed). */
  answer(message: Json, from: 'client' | 'server'): boolean {
    const key = idKey(message.id as Id);
    const own = this.own.get(key);
    if (!own || own.to !== from) return false;
    this.own.delete(key);
    own.resolve(message);
    return true;
  }

  /** Whether `id` is one of these requests, and the client request it was sent for. */
  find(id: Id): { related?: Id } | undefined {
    return this.own.get(idKey(id));
  }

  /** The upstream is gone: every request still open is answered with an error. */
  failAll(reason: string): void {
    for (const own of [...this.own.values()]) own.resolve({ jsonrpc: '2.0', error: { code: INTERNAL_ERROR, message: reason } });
    this.own.clear();
  }
}
