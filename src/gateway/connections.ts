import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { addressKey, plainAddress, type ClientAddresses } from '../http/client-address.js';

export interface ConnectionLimits {
  max: number;
  maxPerAddress: number;
  /** A connection that has not sent a complete request head this long after it opened is closed. */
  headersTimeoutMs: number;
  /** A request that has not arrived whole (head and body) this long after it began is answered 408. */
  requestTimeoutMs: number;
  /** A connection idle between requests (keep-alive) is closed after this long. */
  keepAliveMs: number;
}

/** What the guard knows of an admitted connection. */
interface Admitted {
  key: string;
  release: () => void;
  /** Set until its first request head is complete: then it is closed at this deadline. */
  deadline?: NodeJS.Timeout;
  /** When its last request head arrived, as a count of request heads since start. */
  used: number;
}

/** Node's HTTP parser on a server socket: `duration()` is 0 between two messages (Node 18.3+). */
type ParsedSocket = Socket & { parser?: { duration?: () => number } | null; _httpMessage?: unknown };

/**
 * A kept-alive connection between two requests: it has answered everything it was asked (no
 * response in progress or unsent), and Node's parser has no part of a next request. Closing it
 * loses nothing the gateway has read; false when Node's state cannot be read.
 */
function idleBetweenRequests(socket: ParsedSocket): boolean {
  const duration = socket.parser?.duration;
  if (typeof duration !== 'function') return false;
  return !socket.destroyed && !socket._httpMessage && socket.writableLength === 0 && duration.call(socket.parser) === 0;
}

/** Refused connections that get a 503 at once; beyond these they are closed without one. */
const MAX_ANSWERED_REFUSALS = 256;
const REFUSED = 'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ';

/**
 * Caps on what clients can hold open: connections in total and per client address (IPv6: per
 * /64, see `addressKey`), each with a deadline for its first request head. Connections that
 * have not sent a complete request head yet ("waiting") may hold at most half of the total; a new
 * connection that finds them at that share, or the gateway full, closes the oldest waiting one
 * instead of being refused, so a few addresses reopening half-sent requests cannot lock other
 * clients out: only connections that are doing requests fill the gateway. At a cap with no
 * waiting connection to close, the least recently used kept-alive connection that is idle between
 * two requests is closed instead (of the same address, at max_per_address); only when every
 * connection has a request in progress is the new one refused. A trusted proxy's
 * connections count towards the total only; behind it, requests in progress are counted per
 * forwarded client address instead. Node's own headersTimeout and requestTimeout are set too;
 * this accounting does not wait for its periodic check.
 */
export class ConnectionGuard {
  private open = 0;
  private readonly perAddress = new Map<string, number>();
  private readonly proxied = new Map<string, number>();
  /** Refused connections still being told why. */
  private refusing = 0;
  /** Every admitted connection still open. */
  private readonly admitted = new Map<Socket, Admitted>();
  /** Admitted connections without a complete request head yet, oldest first. */
  private readonly waiting = new Set<Socket>();
  /** Request heads since start: orders connections by last use. */
  private uses = 0;
  /**
   * Refused connections and requests since start, by reason (for metrics and tests); `idle`
   * counts waiting connections closed to make room for a newer one, `keepalive` kept-alive
   * connections idle between requests closed for the same.
   */
  readonly refused = { total: 0, address: 0, forwarded: 0, idle: 0, keepalive: 0 };

  constructor(private readonly limits: () => ConnectionLimits, private readonly addresses: () => ClientAddresses) {}

  get connections(): number {
    return this.open;
  }

  /** Open connections that have not sent a complete request head yet. */
  get waitingConnections(): number {
    return this.waiting.size;
  }

  attach(server: Server): void {
    this.apply(server);
    server.on('connection', (socket: Socket) => this.connected(socket));
  }

  /**
   * Node's own deadlines, from the current limits (again after a configuration reload). Node
   * (18+) applies headersTimeout and requestTimeout from the first byte of a request to its last,
   * never to a connection idle between requests, so keepAliveTimeout may be longer than both.
   */
  apply(server: Server): void {
    const l = this.limits();
    server.headersTimeout = l.headersTimeoutMs;
    server.requestTimeout = l.requestTimeoutMs;
    server.keepAliveTimeout = l.keepAliveMs;
  }

  private connected(socket: Socket): void {
    const l = this.limits();
    const address = plainAddress(socket.remoteAddress ?? 'unknown');
    const key = addressKey(address);
    const trusted = this.addresses().isTrusted(address);
    if (!trusted && (this.perAddress.get(key) ?? 0) >= l.maxPerAddress && !this.evictIdle(key)) {
      return this.refuse(socket, 'address', 'this address has as many connections open as connections.max_per_address allows\n');
    }
    // Waiting connections yield to newer ones: at half of max, and when the gateway is full.
    if (this.waiting.size >= Math.max(1, Math.floor(l.max / 2))) this.evictOldestWaiting();
    if (this.open >= l.max && !this.evictOldestWaiting() && !this.evictIdle()) {
      return this.refuse(socket, 'total', 'the gateway has as many connections open as connections.max allows; retry later\n');
    }
    this.open++;
    this.perAddress.set(key, (this.perAddress.get(key) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.stopWaiting(socket);
      this.admitted.delete(socket);
      this.open--;
      const n = (this.perAddress.get(key) ?? 1) - 1;
      if (n <= 0) this.perAddress.delete(key);
      else this.perAddress.set(key, n);
    };
    // Until its first request head is complete, a connection lives on this deadline.
    const deadline = setTimeout(() => socket.destroy(), l.headersTimeoutMs);
    deadline.unref();
    this.admitted.set(socket, { key, release, deadline, used: 0 });
    this.waiting.add(socket);
    socket.once('close', release);
  }

  /** Closes the connection that has waited longest without a request head; false when none waits. */
  private evictOldestWaiting(): boolean {
    const oldest = this.waiting.values().next();
    if (oldest.done) return false;
    this.refused.idle++;
    this.close(oldest.value);
    return true;
  }

  /**
   * Closes the least recently used connection (of `key`, when given) that is kept alive idle
   * between two requests; false when every one has a request in progress. Only at a cap, so the
   * scan is no work on the way of a request. Closing one is an HTTP/1.1 server's right between
   * requests, and nothing the gateway has read is lost: a request that its client sends at that
   * very moment is refused by the closing connection (the client sees a socket error, never a
   * hang) and has not been forwarded, so sending it again is safe.
   */
  private evictIdle(key?: string): boolean {
    let pick: Socket | undefined;
    let used = Infinity;
    for (const [socket, a] of this.admitted) {
      if (a.deadline || a.used >= used || (key !== undefined && a.key !== key)) continue;
      if (!idleBetweenRequests(socket)) continue;
      pick = socket;
      used = a.used;
    }
    if (!pick) return false;
    this.refused.keepalive++;
    this.close(pick);
    return true;
  }

  /** Its slot is free now, not when the close event comes round; destroy: nothing more is read from it. */
  private close(socket: Socket): void {
    this.admitted.get(socket)?.release();
    socket.on('error', () => {});
    socket.destroy();
  }

  private stopWaiting(socket: Socket): void {
    const a = this.admitted.get(socket);
    if (!a?.deadline) return;
    clearTimeout(a.deadline);
    a.deadline = undefined;
    this.waiting.delete(socket);
  }

  private refuse(socket: Socket, why: 'total' | 'address', text: string): void {
    this.refused[why]++;
    socket.on('error', () => {});
    // In a flood, refused connections must not hold descriptors either: past a few, no answer at all.
    if (this.refusing >= MAX_ANSWERED_REFUSALS) return void socket.destroy();
    this.refusing++;
    socket.end(`${REFUSED}${Buffer.byteLength(text)}\r\n\r\n${text}`);
    // Whatever the client does not read in a second is not waited for.
    const timer = setTimeout(() => socket.destroy(), 1000);
    timer.unref();
    socket.once('close', () => { clearTimeout(timer); this.refusing--; });
  }

  /**
   * A request's head arrived. From a trusted proxy, counts it against its client's address until
   * it ends; false (answered 429) when that address already has max_per_address in progress.
   */
  request(req: IncomingMessage, res: ServerResponse, client: string): boolean {
    const a = this.admitted.get(req.socket);
    if (a) {
      if (a.deadline) this.stopWaiting(req.socket);
      a.used = ++this.uses;
    }
    if (!this.addresses().isTrusted(plainAddress(req.socket.remoteAddress ?? ''))) return true;
    const key = addressKey(client);
    const n = this.proxied.get(key) ?? 0;
    if (n >= this.limits().maxPerAddress) {
      this.refused.forwarded++;
      res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '5', connection: 'close' });
      res.end('this client address has as many requests in progress as connections.max_per_address allows\n');
      return false;
    }
    this.proxied.set(key, n + 1);
    res.once('close', () => {
      const left = (this.proxied.get(key) ?? 1) - 1;
      if (left <= 0) this.proxied.delete(key);
      else this.proxied.set(key, left);
    });
    return true;
  }
}
