// Issue 23 items 3–6 (memory, caps, floods), each with real HTTP clients against a real `toolgate serve`.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BIN, cli, LENIENT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const init = (version = '2025-06-18') => ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'floods', version: '1' } } });
const call = (id: string, name: string, args: object = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const METRICS_TOKEN = 'metrics-token-for-flood-tests-0123';
const ADMIN = 'admin-token-for-flood-tests-012345';
const dirs: string[] = [];
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Serve { base: string; port: number; dir: string; config: string; stop(): Promise<void> }

async function serve(config: Record<string, unknown>, env: Record<string, string> = {}): Promise<Serve> {
  const dir = tempDir('toolgate-floods-');
  dirs.push(dir);
  const policy = writePolicy(dir, config.policy ?? { version: '1', default: 'allow' });
  const { policy: _p, ...rest } = config;
  const file = join(dir, 'toolgate.json');
  writeFileSync(file, JSON.stringify({
    listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db',
    servers: { lenient: { command: process.execPath, args: [LENIENT], auth: 'none', policy } },
    ...rest,
  }));
  const child = spawn(process.execPath, [BIN, 'serve', '-c', file], { env: testEnv(dir, { TOOLGATE_LOG_LEVEL: 'info', ...env }) });
  children.push(child);
  let log = '';
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      log += d;
      const m = /"listen":"(http:\/\/[^"]+)"/.exec(log);
      if (m) resolve(m[1]);
    });
    child.stdout!.on('data', (d) => { log += d; });
    void exited.then(() => reject(new Error(`serve exited: ${log}`)));
  });
  // Bounded: a gateway that does not end after SIGTERM fails the test with its log instead of hanging the file.
  const stop = async () => {
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => { timer = setTimeout(() => r('late'), 30_000); });
    const ended = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (ended === 'late') { child.kill('SIGKILL'); throw new Error(`serve did not exit within 30 s of SIGTERM: ${log.slice(-2000)}`); }
  };
  return { base, port: Number(new URL(base).port), dir, config: file, stop };
}

async function post(base: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/mcp/lenient`, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function session(base: string, version?: string): Promise<Record<string, string>> {
  const r = await post(base, init(version));
  assert.equal(r.status, 200, r.text);
  const headers = { 'mcp-session-id': r.headers.get('mcp-session-id')!, 'mcp-protocol-version': version ?? '2025-06-18' };
  assert.equal((await post(base, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status, 202);
  return headers;
}

/** The text of the tools/call answer in a JSON body or an SSE stream. */
function answerText(body: string, id: string): string {
  const messages = body.startsWith('{') ? [body] : [...body.matchAll(/^data: (.+)$/gm)].map((m) => m[1]);
  for (const m of messages) {
    const parsed = JSON.parse(m) as { id?: string; result?: { content: { text: string }[] } };
    if (parsed.id === id) return parsed.result!.content[0].text;
  }
  throw new Error(`no answer to ${id} in ${body.slice(0, 300)}`);
}

async function metric(s: Serve, name: string, headers: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${s.base}/metrics`, { headers })).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`no ${name} in /metrics`);
  return Number(m[1]);
}

/** Polls until `check` holds (bounded), for what happens in another process. */
async function eventually(check: () => boolean | Promise<boolean>, tries = 400): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** A plain HTTP request from a chosen local address (127.0.0.0/8 all reach the listener). */
function from(localAddress: string, port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: IncomingMessage['headers']; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, localAddress, method, path, headers: { host: `127.0.0.1:${port}`, ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A socket from `localAddress` that sends `text` and nothing more; `refused` once the gateway answered 503 or closed it. */
function halfSent(localAddress: string, port: number, text: string): { socket: Socket; state: { refused: boolean; closed: boolean; data: string } } {
  const state = { refused: false, closed: false, data: '' };
  const socket = connect({ host: '127.0.0.1', port, localAddress }, () => socket.write(text));
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => { state.data += d; if (state.data.startsWith('HTTP/1.1 503')) state.refused = true; });
  socket.on('error', () => {});
  socket.on('close', () => { state.closed = true; });
  return { socket, state };
}

interface SseEvent { id?: string; data: string }

/**
 * Reads an SSE response event by event until `enough` says so (then hangs up) or it ends; rejects,
 * with what it saw, if neither happens within `limitMs`.
 */
function readSse(port: number, method: string, headers: Record<string, string>, body: string | undefined, enough: (events: SseEvent[]) => boolean, limitMs = 30_000): Promise<SseEvent[]> {
  return new Promise((resolve, reject) => {
    const events: SseEvent[] = [];
    let buffer = '';
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`${method} stream neither ended nor had what was awaited within ${limitMs} ms; events: ${JSON.stringify(events)}, unparsed: ${JSON.stringify(buffer)}`));
    }, limitMs);
    const done = resolve;
    resolve = (v) => { clearTimeout(timer); done(v); };
    const fail = reject;
    reject = (e) => { clearTimeout(timer); fail(e); };
    const req = request({ host: '127.0.0.1', port, method, path: '/mcp/lenient', headers: { host: `127.0.0.1:${port}`, ...headers }, agent: false }, (res) => {
      if (!String(res.headers['content-type']).startsWith('text/event-stream')) return reject(new Error(`not a stream: ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buffer += d;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) continue;
          const id = /^id: (.*)$/m.exec(block)?.[1];
          events.push({ id, data: /^data: ?(.*)$/m.exec(block)?.[1] ?? '' });
          if (enough(events)) { req.destroy(); return resolve(events); }
        }
      });
      res.on('end', () => resolve(events));
    });
    req.on('error', (err) => (events.length > 0 ? resolve(events) : reject(err)));
    req.end(body);
  });
}

describe('toolgate serve: memory, caps and floods (issue 23)', () => {
  it('3: SSE events of delivered answers are not kept; a stream the client dropped can still be resumed', { timeout: 120_000 }, async () => {
    const s = await serve({});
    try {
      const headers = await session(s.base, '2025-11-25');
      for (const id of ['big1', 'big2', 'big3']) {
        const r = await post(s.base, call(id, 'big', { bytes: 1_000_000 }), headers);
        assert.match(r.headers.get('content-type') ?? '', /text\/event-stream/, 'the log message first made the answer a stream');
        assert.equal(answerText(r.text, id).length, 1_000_000);
      }
      assert.ok(await eventually(async () => (await metric(s, 'toolgate_resume_buffer_bytes')) === 0), 'three delivered 1 MB answers keep no bytes');
      assert.equal(await metric(s, 'toolgate_resume_buffer_events'), 0);

      // A call the server never answers: the client reads the priming event and the log message, then drops the stream.
      const body = JSON.stringify(call('r1', 'big', { hang: true }));
      const seen = await readSse(s.port, 'POST', { ...JSON_HEADERS, ...headers }, body, (ev) => ev.some((e) => e.data.includes('notifications/message')));
      const priming = seen.find((e) => e.data === '')!;
      const message = seen.find((e) => e.data.includes('notifications/message'))!;
      assert.ok(priming?.id && message?.id, 'both events carry ids');
      assert.ok(await metric(s, 'toolgate_resume_buffer_events') >= 1, 'the dropped stream is kept for a reconnect');
      const resumed = await readSse(s.port, 'GET', { accept: 'text/event-stream', ...headers, 'last-event-id': priming.id! }, undefined, () => false);
      assert.deepEqual(resumed.map((e) => e.id), [message.id], 'the event after Last-Event-ID comes again');
      assert.equal(resumed[0].data, message.data);
      // Replayed to its end: delivered, so released.
      assert.ok(await eventually(async () => (await metric(s, 'toolgate_resume_buffer_events')) === 0), 'the replayed stream\'s events were released');

      // The GET stream: news about no call is kept until the client resumes after it.
      const stream = readSse(s.port, 'GET', { accept: 'text/event-stream', ...headers }, undefined, (ev) => ev.some((e) => e.data.includes('list_changed')));
      assert.ok(await eventually(async () => (await metric(s, 'toolgate_resume_buffer_events')) === 1), 'the GET stream\'s priming event');
      assert.equal(answerText((await post(s.base, call('c1', 'chatty'), headers)).text, 'c1'), 'chatty done');
      const changed = (await stream).find((e) => e.data.includes('list_changed'))!;
      assert.ok(changed.id, 'the list change came on the GET stream');
      assert.ok(await metric(s, 'toolgate_resume_buffer_events') >= 2, 'kept: the client may not have it');
      const again = readSse(s.port, 'GET', { accept: 'text/event-stream', ...headers, 'last-event-id': changed.id! }, undefined, () => true);
      assert.ok(await eventually(async () => (await metric(s, 'toolgate_resume_buffer_events')) === 0), 'resumed after it: released');
      await fetch(`${s.base}/mcp/lenient`, { method: 'DELETE', headers });
      await again;
    } finally {
      await s.stop();
    }
  });

  it('4: approval.max_pending refuses a grant\'s further held calls; ended approvals are purged; /metrics takes a token', { timeout: 120_000 }, async () => {
    const s = await serve({
      policy: { version: '1', default: 'allow', tools: { echo: { action: 'approve', approval: { mode: 'retry', max_pending: 2 } } } },
      approvals: { retention: '1s' },
      metrics: { token: '${METRICS}' },
    }, { METRICS: METRICS_TOKEN });
    const env = testEnv(s.dir);
    try {
      const headers = await session(s.base);
      const first = answerText((await post(s.base, call('e1', 'echo', { n: 1 }), headers)).text, 'e1');
      const id = /Approval (\w+) is pending/.exec(first)?.[1];
      assert.ok(id, first);
      assert.match(answerText((await post(s.base, call('e2', 'echo', { n: 2 }), headers)).text, 'e2'), /is pending/);
      const third = answerText((await post(s.base, call('e3', 'echo', { n: 3 }), headers)).text, 'e3');
      assert.match(third, /^\[POLICY DENIED\] 2 calls of this grant already wait for approval \(approval\.max_pending\)/);
      const pending = JSON.parse((await cli(['approvals', 'list', '-c', s.config, '--json'], env)).stdout) as unknown[];
      assert.equal(pending.length, 2, 'the refused call opened no approval');

      // Denied, it ends; once a newer change exists and the retention has passed, its row is gone.
      assert.equal((await cli(['approvals', 'deny', id!, '-c', s.config], env)).code, 0);
      const listed = async () => (JSON.parse((await cli(['approvals', 'list', '--all', '-c', s.config, '--json'], env)).stdout) as { id: string }[]).map((a) => a.id);
      // Listed before the newer change: after it, the 1 s retention may pass before a CLI process
      // has even started (8 s at a load of 15), and the row may already be gone.
      assert.ok((await listed()).includes(id!), 'the denied approval is the newest change: it is kept');
      assert.match(answerText((await post(s.base, call('e4', 'echo', { n: 4 }), headers)).text, 'e4'), /is pending/, 'a slot is free again');
      assert.ok(await eventually(async () => !(await listed()).includes(id!), 60), 'the denied approval was purged');
      assert.equal((await listed()).length, 2, 'the pending ones stay');

      assert.equal((await fetch(`${s.base}/metrics`)).status, 401);
      assert.equal((await fetch(`${s.base}/metrics`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status, 401);
      assert.equal(await metric(s, 'toolgate_pending_approvals', { authorization: `Bearer ${METRICS_TOKEN}` }), 2, 'the gauge follows changes');
    } finally {
      await s.stop();
    }
  });

  it('5: connections are capped per address; another address, and clients behind a trusted proxy, still get in during a half-sent flood', { timeout: 120_000 }, async () => {
    const s = await serve({
      connections: { max: 200, max_per_address: 50, headers_timeout: '5m', request_timeout: '10m' },
      trusted_proxies: ['127.0.0.3'],
    });
    const sockets: Socket[] = [];
    try {
      // 200 half-sent requests from one address: 50 are held open, the other 150 refused.
      const head = `POST /mcp/lenient HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n`;
      const flood = Array.from({ length: 200 }, () => halfSent('127.0.0.2', s.port, head));
      sockets.push(...flood.map((f) => f.socket));
      assert.ok(await eventually(() => flood.filter((f) => f.state.refused).length === 150), `refused: ${flood.filter((f) => f.state.refused).length}`);
      assert.equal(flood.filter((f) => f.state.closed && !f.state.refused).length, 0, 'the first 50 are still open');
      const one = halfSent('127.0.0.2', s.port, head);
      sockets.push(one.socket);
      assert.ok(await eventually(() => one.state.refused), 'the 51st from that address is refused');
      assert.match(one.state.data, /max_per_address/);

      // A real client from another address initializes meanwhile.
      const headers = await session(s.base);
      assert.equal(answerText((await post(s.base, call('c1', 'echo', { ok: 1 }), headers)).text, 'c1'), 'echo ran with {"ok":1}');

      // Behind the trusted proxy, requests in progress count per forwarded address.
      const held = `POST /mcp/lenient HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nX-Forwarded-For: 198.51.100.7\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{`;
      sockets.push(...Array.from({ length: 50 }, () => halfSent('127.0.0.3', s.port, held).socket));
      const probe = (xff: string, address = '127.0.0.3') => from(address, s.port, 'GET', '/healthz', { 'x-forwarded-for': xff });
      assert.ok(await eventually(async () => (await probe('198.51.100.7')).status === 429), 'the 51st request of 198.51.100.7 is refused');
      assert.equal((await probe('198.51.100.8')).status, 200, 'another client behind the proxy gets in');
      assert.equal((await probe('198.51.100.8, 198.51.100.7')).status, 429, 'the right-most untrusted address counts, not what the client wrote before it');
      assert.equal((await probe('198.51.100.7', '127.0.0.1')).status, 200, 'X-Forwarded-For from an untrusted address is not believed');
      const proxied = await from('127.0.0.3', s.port, 'POST', '/mcp/lenient', { ...JSON_HEADERS, 'x-forwarded-for': '198.51.100.8' }, JSON.stringify(init()));
      assert.equal(proxied.status, 200, proxied.text);
    } finally {
      for (const sock of sockets) sock.destroy();
      await s.stop();
    }
  });

  it('5: connections.max caps all addresses together; a connection that does not finish its request head, or its body, in time is closed and frees its slot', { timeout: 30_000 }, async () => {
    const s = await serve({ connections: { max: 3, headers_timeout: '1s', request_timeout: '2s' } });
    try {
      // Three requests in progress (the 100 Continue says the gateway has read each head) fill the gateway.
      const headers = Object.entries(JSON_HEADERS).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      // One after another: a connection that has not sent its head yet would yield to the next.
      const bodies: ReturnType<typeof halfSent>[] = [];
      for (let i = 0; i < 3; i++) {
        const b = halfSent('127.0.0.1', s.port, `POST /mcp/lenient HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n${headers}Expect: 100-continue\r\nContent-Length: 100\r\n\r\n{`);
        bodies.push(b);
        assert.ok(await eventually(() => b.state.data.startsWith('HTTP/1.1 100')), `request head ${i + 1} was read`);
      }
      const fourth = halfSent('127.0.0.2', s.port, '');
      assert.ok(await eventually(() => fourth.state.refused), 'a fourth connection, from another address, is refused');
      assert.match(fourth.state.data, /connections\.max/);
      assert.ok(await eventually(() => bodies.every((b) => b.state.closed), 400), 'requests whose body never came were closed by the gateway');
      const head = halfSent('127.0.0.1', s.port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n`);
      assert.ok(await eventually(() => head.state.closed, 400), 'a request head that never ends is closed by the gateway');
      assert.ok(!head.state.refused && bodies.every((b) => !b.state.refused), 'closed for time, not refused');
      assert.equal((await from('127.0.0.2', s.port, 'GET', '/healthz', {})).status, 200, 'their slots are free again');
    } finally {
      await s.stop();
    }
  });

  it('5: at the default caps, four addresses reopening half-sent requests do not lock a real client out', { timeout: 60_000 }, async () => {
    const s = await serve({});
    const flood: ReturnType<typeof halfSent>[] = [];
    let reopening = true;
    // Each address keeps max_per_address (128) half-sent requests open, reopening whatever is closed,
    // a bounded number of times: together they could hold every one of connections.max (512).
    let reopens = 0;
    const hold = (address: string) => {
      const h = halfSent(address, s.port, `POST /mcp/lenient HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n`);
      flood.push(h);
      h.socket.on('close', () => { if (reopening && reopens++ < 2000) hold(address); });
    };
    try {
      for (let i = 0; i < 4 * 128; i++) hold(`127.0.0.${2 + (i % 4)}`);
      // Each of the first 512 has connected (and the gateway has begun closing waiting ones for newer
      // ones). How many are open at one moment depends on how fast the gateway turns them over.
      assert.ok(await eventually(() => flood.length >= 4 * 128 && flood.slice(0, 4 * 128).every((f) => !f.socket.connecting)), 'the flood is connected');
      const answer = await from('127.0.0.50', s.port, 'POST', '/mcp/lenient', JSON_HEADERS, JSON.stringify(init()));
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.text, /"protocolVersion"/);
    } finally {
      reopening = false;
      for (const f of flood) f.socket.destroy();
      await s.stop();
    }
  });

  it('6: OAuth registrations are throttled per address, and unapproved clients expire so the pending list cannot stay full', { timeout: 120_000 }, async () => {
    const s = await serve({
      admin: { token: ADMIN },
      oauth: { builtin: true, max_pending_clients: 2, registrations_per_address: 2, pending_client_ttl: '2s' },
      servers: { lenient: { command: process.execPath, args: [LENIENT] } },
    });
    const register = (address: string) => from(address, s.port, 'POST', '/oauth/register', { 'content-type': 'application/json' }, JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'flood' }));
    try {
      const first = await register('127.0.0.1');
      assert.equal(first.status, 201, first.text);
      assert.equal((await register('127.0.0.1')).status, 201);
      const throttled = await register('127.0.0.1');
      assert.equal(throttled.status, 429, 'a third registration from the address');
      assert.match(throttled.text, /this address registered 2 clients/);
      assert.ok(Number(throttled.headers['retry-after']) > 0, `retry-after: ${throttled.headers['retry-after']}`);
      const full = await register('127.0.0.2');
      assert.equal(full.status, 429, 'the pending list is full');
      assert.match(full.text, /already wait for approval/);
      // Minutes in production, two seconds here: the unapproved clients are forgotten and others can register.
      assert.ok(await eventually(async () => (await register('127.0.0.2')).status === 201), 'a registration passes once the unapproved ones expired');
      const clientId = (JSON.parse(first.text) as { client_id: string }).client_id;
      const page = await fetch(`${s.base}/oauth/authorize?client_id=${clientId}&response_type=code`);
      assert.equal(page.status, 400);
      assert.match(await page.text(), /unknown client_id/);
    } finally {
      await s.stop();
    }
  });
});
