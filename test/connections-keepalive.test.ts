// Keep-alive at the front door (pool bench finding: 1 in 9 calls failed with "other side closed"
// when serve closed idle keep-alive connections after Node's default 5 s under a client's pool).
// connections.keep_alive sets how long an idle connection is kept, and at a cap an idle kept-alive
// connection makes room for a new one instead of the new one being refused. Real sockets only;
// nothing here asserts how long anything took.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Agent, buildConnector, fetch } from 'undici';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { ConnectionGuard } from '../src/gateway/connections.js';
import { ClientAddresses } from '../src/http/client-address.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { tempDir } from './helpers/toolgate.js';

const ADMIN = 'keepalive-test-admin-token';
const stops: (() => Promise<void>)[] = [];
after(async () => { for (const stop of stops.splice(0)) await stop(); });

async function gatewayWith(connections: Record<string, unknown>): Promise<{ port: number; host: string }> {
  const dir = tempDir();
  const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin: { token: ADMIN }, connections });
  const state = openMemoryState();
  const audit = new AuditLog(join(dir, 'audit.db'));
  const gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
  const { port } = await gateway.start();
  stops.push(async () => { await gateway.stop(); audit.close(); await state.close(); });
  return { port, host: `127.0.0.1:${port}` };
}

interface Response { status: number; headers: Record<string, string>; body: string }

/** A client connection written to byte by byte, reading HTTP/1.1 responses with a Content-Length. */
class RawConnection {
  private buffer = '';
  private wake?: () => void;
  closed = false;
  readonly socket: Socket;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('utf8');
    this.socket.on('data', (d: string) => { this.buffer += d; this.wake?.(); });
    this.socket.on('error', () => {});
    this.socket.on('close', () => { this.closed = true; this.wake?.(); });
  }

  async ready(): Promise<this> {
    if (this.socket.connecting) await once(this.socket, 'connect');
    return this;
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** The next whole response (Content-Length or chunked); its head alone when `headOnly` (an event stream, 100 Continue). */
  async response(headOnly = false): Promise<Response> {
    for (;;) {
      const parsed = this.parse(headOnly);
      if (parsed) return parsed;
      if (this.closed) throw new Error(`connection closed; received ${JSON.stringify(this.buffer)}`);
      await new Promise<void>((r) => { this.wake = r; });
    }
  }

  private parse(headOnly: boolean): Response | undefined {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [status, ...lines] = this.buffer.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    let at = end + 4;
    let body = '';
    if (headOnly) at = this.buffer.length;
    else if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const line = this.buffer.indexOf('\r\n', at);
        if (line < 0) return undefined;
        const size = parseInt(this.buffer.slice(at, line), 16);
        if (this.buffer.length < line + 2 + size + 2) return undefined;
        body += this.buffer.slice(line + 2, line + 2 + size);
        at = line + 2 + size + 2;
        if (size === 0) break;
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (this.buffer.length < at + length) return undefined;
      body = this.buffer.slice(at, at + length);
      at += length;
    }
    this.buffer = this.buffer.slice(at);
    return { status: Number(status.split(' ')[1]), headers, body };
  }

  async closedByServer(): Promise<void> {
    if (!this.closed) await once(this.socket, 'close');
  }
}

const get = (path: string, host: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`;

async function healthyOn(c: RawConnection, host: string): Promise<Response> {
  c.write(get('/healthz', host));
  const r = await c.response();
  assert.equal(r.status, 200);
  return r;
}

describe('connections.keep_alive', () => {
  it('a short keep_alive closes a connection idle between requests, and says so in Keep-Alive', async () => {
    const { port, host } = await gatewayWith({ keep_alive: '1s' });
    const c = await new RawConnection(port).ready();
    const r = await healthyOn(c, host);
    assert.equal(r.headers['keep-alive'], 'timeout=1');
    // The server closes it on its own (the test's own timeout is the only clock).
    await c.closedByServer();
  });

  it('by default a pooled connection idle past Node\'s 5 s (and past headers_timeout) is reused without a socket error', { timeout: 30_000 }, async () => {
    // headers_timeout 1s: Node's header deadline must not reach a connection idle between requests.
    const { port } = await gatewayWith({ headers_timeout: '1s', request_timeout: '2s' });
    let opened = 0;
    const connector = buildConnector({});
    const agent = new Agent({ connections: 1, connect: (opts, cb) => { opened++; return connector(opts, cb); } });
    try {
      const first = await fetch(`http://127.0.0.1:${port}/healthz`, { dispatcher: agent });
      assert.equal(first.status, 200);
      const advertised = first.headers.get('keep-alive');
      await first.text();
      // Past Node's default keep-alive (5 s, closed at 6 s): with it, the pool's connection is gone.
      await sleep(7_000);
      const second = await fetch(`http://127.0.0.1:${port}/healthz`, { dispatcher: agent });
      assert.equal(second.status, 200);
      await second.text();
      assert.equal(opened, 1, 'the idle connection was closed under the client\'s pool');
      assert.equal(advertised, 'timeout=65', 'the client is told how long it may keep the connection');
    } finally {
      await agent.close();
    }
  });
});

describe('at a connection cap, idle kept-alive connections make room', () => {
  for (const [cap, connections] of [['connections.max', { max: 2 }], ['connections.max_per_address', { max_per_address: 2 }]] as const) {
    it(`${cap}: the least recently used idle connection is closed to admit a new one`, async () => {
      const { port, host } = await gatewayWith(connections);
      const older = await new RawConnection(port).ready();
      await healthyOn(older, host);
      const newer = await new RawConnection(port).ready();
      await healthyOn(newer, host);
      // Both idle between requests; the gateway is at its cap.
      const late = await new RawConnection(port).ready();
      await healthyOn(late, host);
      await older.closedByServer();
      assert.equal(newer.closed, false, 'the more recently used connection was closed');
      const metrics = await (async () => { newer.write(get('/metrics', host)); return newer.response(); })();
      assert.equal(metrics.status, 200);
      assert.match(metrics.body, /toolgate_connections_refused\{cap="keepalive"\} 1\b/);
      late.socket.destroy();
      newer.socket.destroy();
    });
  }

  it('with every connection busy (a stream open, a request\'s body awaited) the new one is refused and neither request is lost', async () => {
    const { port, host } = await gatewayWith({ max: 2 });
    const stream = await new RawConnection(port).ready();
    stream.write(get('/api/approvals/stream', host, `Authorization: Bearer ${ADMIN}\r\n`));
    assert.equal((await stream.response(true)).status, 200);
    const sending = await new RawConnection(port).ready();
    await healthyOn(sending, host);
    // Its next request has arrived in part: the gateway has read the head (100 Continue), not the body.
    sending.write(`POST /api/no-such-thing HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`);
    assert.equal((await sending.response(true)).status, 100);
    const late = await new RawConnection(port).ready();
    const refused = await late.response();
    assert.equal(refused.status, 503);
    assert.match(refused.body, /connections\.max/);
    await late.closedByServer();
    assert.equal(sending.closed, false, 'a connection with a request arriving was closed');
    sending.write('{}');
    const answer = await sending.response();
    assert.equal(answer.status, 404, `the request whose body was awaited was not answered as itself: ${answer.status} ${answer.body}`);
    assert.equal(stream.closed, false, 'a connection with a response in progress was closed');
    stream.socket.destroy();
    sending.socket.destroy();
  });
});

describe('an idle kept-alive connection is closed only between requests', () => {
  it('one whose next request head has begun arriving is not closed for a new connection', async () => {
    // Wired as serve wires it, on a bare server whose sockets the test can see.
    const guard = new ConnectionGuard(() => ({ max: 1, maxPerAddress: 100, headersTimeoutMs: 10_000, requestTimeoutMs: 10_000, keepAliveMs: 65_000 }), () => new ClientAddresses([]));
    const server = createServer((req, res) => { if (guard.request(req, res, '127.0.0.1')) res.end('ok'); });
    guard.attach(server);
    const accepted: Socket[] = [];
    server.on('connection', (s: Socket) => accepted.push(s));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const host = `127.0.0.1:${port}`;
    try {
      const c = await new RawConnection(port).ready();
      await healthyOn(c, host);
      const before = accepted[0].bytesRead;
      c.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\n`);
      // Until the gateway has read that half: a condition, not a clock.
      while (accepted[0].bytesRead === before) await new Promise((r) => setImmediate(r));
      const late = await new RawConnection(port).ready();
      assert.equal((await late.response()).status, 503);
      assert.equal(guard.refused.keepalive, 0);
      c.write('\r\n');
      assert.equal((await c.response()).body, 'ok', 'the request that was arriving was answered');
      // Between requests again, it now yields to a newer connection.
      const next = await new RawConnection(port).ready();
      await healthyOn(next, host);
      await c.closedByServer();
      assert.equal(guard.refused.keepalive, 1);
      next.socket.destroy();
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
