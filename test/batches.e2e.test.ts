import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import type { StateStore } from '../src/state/types.js';
import { FIXTURES, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * JSON-RPC batches by the session's negotiated protocol version, the same on every transport:
 * MCP 2025-03-26 allows them (each element judged as if it came alone, the answers as one array),
 * 2025-06-18 and later do not (one -32600 error, nothing forwarded). The upstream is a lenient
 * server that runs every element of a batch and logs each tool it runs.
 */
const LENIENT_PY = join(FIXTURES, 'lenient.py');
const POLICY = { version: '1', default: 'allow', tools: { delete_file: { action: 'deny' } } };
const call = (id: string, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const ping = (id: string) => ({ jsonrpc: '2.0', id, method: 'ping' });
const initialize = (version: string) => ({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'batch-test', version: '1' } } });
const INITIALIZED = { jsonrpc: '2.0', method: 'notifications/initialized' };
/** A batch with a denied call, an allowed one, a ping and a notification. */
const batch = (p: string) => [call(`${p}-1`, 'delete_file'), call(`${p}-2`, 'echo'), ping(`${p}-3`), { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'x', progress: 1 } }];

function ran(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { ran?: string }).ran ?? '').filter(Boolean);
  } catch {
    return [];
  }
}

/** The answers to batch(p), in order: the policy's denial, the echo, the ping. */
function assertJudgedEach(answers: any[], p: string): void {
  assert.ok(Array.isArray(answers), `one array of answers: ${JSON.stringify(answers)}`);
  assert.deepEqual(answers.map((a) => a.id), [`${p}-1`, `${p}-2`, `${p}-3`]);
  assert.match(answers[0].result.content[0].text, /^\[POLICY DENIED\]/);
  assert.equal(answers[1].result.content[0].text, 'echo ran');
  assert.deepEqual(answers[2].result, {});
}

function assertRefusedWhole(answer: any, version: string): void {
  assert.equal(answer.id, null);
  assert.equal(answer.error.code, -32600);
  assert.match(answer.error.message, new RegExp(`batches are not part of MCP ${version}`));
}

describe('batches over stdio (toolgate run)', () => {
  for (const version of ['2025-03-26', '2025-06-18', '2025-11-25']) {
    it(`MCP ${version}: ${version === '2025-03-26' ? 'each element judged, the answers as one line' : 'refused whole, nothing forwarded'}`, async () => {
      const dir = tempDir();
      const log = join(dir, 'ran.log');
      const raw = new RawSession(['-p', writePolicy(dir, POLICY), '--state', 'memory:', '--', 'python3', LENIENT_PY], testEnv(dir, { LENIENT_LOG: log }));
      try {
        raw.send(initialize(version));
        await raw.response('init');
        raw.send(INITIALIZED);
        raw.send(batch('b'));
        raw.send(ping('after'));
        await raw.response('after');
        const answer = await raw.waitFor((m) => Array.isArray(m) || (m.id === null && m.error));
        if (version === '2025-03-26') {
          assertJudgedEach(answer, 'b');
          assert.deepEqual(ran(log), ['echo']);
        } else {
          assertRefusedWhole(answer, version);
          assert.deepEqual(ran(log), [], 'nothing in the batch reached the server');
          assert.ok(!raw.lines.some((m: any) => m?.id === 'b-3'), 'the batch\'s ping was not answered either');
        }
      } finally {
        await raw.close();
      }
    });
  }
});

/** A raw legacy SSE session: the GET stream's events, and POSTs to its message endpoint. */
class RawSse {
  readonly events: any[] = [];
  private endpoint?: string;
  private readonly abort = new AbortController();
  private wake: () => void = () => {};

  constructor(private readonly base: string) {}

  async open(): Promise<void> {
    const res = await fetch(`${this.base}/sse/lenient`, { headers: { accept: 'text/event-stream' }, signal: this.abort.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        buf += decoder.decode(value, { stream: true });
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
          if (/^event: endpoint$/m.test(event)) this.endpoint = data;
          else if (data) this.events.push(JSON.parse(data));
          this.wake();
        }
      }
    })();
    while (!this.endpoint) await new Promise<void>((r) => { this.wake = r; });
  }

  async post(body: unknown): Promise<number> {
    const res = await fetch(new URL(this.endpoint!, this.base), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    return res.status;
  }

  async waitFor(pred: (m: any) => boolean): Promise<any> {
    for (;;) {
      const found = this.events.find(pred);
      if (found) return found;
      await new Promise<void>((r) => { this.wake = r; });
    }
  }

  close(): void {
    this.abort.abort();
  }
}

describe('batches over HTTP (toolgate serve): Streamable HTTP and SSE', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  const log = () => ran(join(dir, 'ran.log'));

  before(async () => {
    dir = tempDir();
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      servers: { lenient: { command: 'python3', args: [LENIENT_PY], auth: 'none', env: { LENIENT_LOG: join(dir, 'ran.log') }, policy: writePolicy(dir, POLICY) } },
    });
    state = openMemoryState();
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
  });
  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
    const res = await fetch(`${base}/mcp/lenient`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  }

  async function streamable(version: string): Promise<Record<string, string>> {
    const opened = await post(initialize(version));
    assert.equal(opened.status, 200);
    const h = { 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': version };
    assert.equal((await post(INITIALIZED, h)).status, 202);
    return h;
  }

  it('Streamable HTTP, MCP 2025-03-26: each element judged, the answers as one JSON array', async () => {
    const before = log().length;
    const res = await post(batch('h25'), await streamable('2025-03-26'));
    assert.equal(res.status, 200);
    assertJudgedEach(res.body, 'h25');
    assert.deepEqual(log().slice(before), ['echo']);
  });

  for (const version of ['2025-06-18', '2025-11-25']) {
    it(`Streamable HTTP, MCP ${version}: refused whole with one -32600 error, nothing forwarded`, async () => {
      const h = await streamable(version);
      const before = log().length;
      const res = await post(batch('h'), h);
      assert.equal(res.status, 400);
      assertRefusedWhole(res.body, version);
      assert.deepEqual((await post(ping('p'), h)).body.result, {}, 'the session carries on');
      assert.deepEqual(log().slice(before), [], 'nothing in the batch reached the server');
    });
  }

  it('Streamable HTTP, MCP 2025-03-26: a batch that nests a batch, repeats an id or is empty is refused whole', async () => {
    const h = await streamable('2025-03-26');
    const before = log().length;
    for (const body of [[call('n1', 'echo'), [call('n2', 'echo')]], [call('d1', 'echo'), call('d1', 'echo')], []]) {
      const res = await post(body, h);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, -32600);
    }
    assert.deepEqual(log().slice(before), [], 'nothing reached the server');
  });

  it('Streamable HTTP: a batch that carries initialize is refused, and opens no session', async () => {
    const sessions = gateway.sessionCount;
    const res = await post([initialize('2025-03-26')]);
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, -32600);
    assert.equal(gateway.sessionCount, sessions);
  });

  for (const version of ['2025-03-26', '2025-06-18']) {
    it(`SSE, MCP ${version}: ${version === '2025-03-26' ? 'each element judged, the answers as one event' : 'refused whole, nothing forwarded'}`, async () => {
      const sse = new RawSse(base);
      await sse.open();
      try {
        assert.equal(await sse.post(initialize(version)), 202);
        await sse.waitFor((m) => m.id === 'init');
        assert.equal(await sse.post(INITIALIZED), 202);
        const before = log().length;
        assert.equal(await sse.post(batch('s')), 202);
        assert.equal(await sse.post(ping('after')), 202);
        await sse.waitFor((m) => m.id === 'after');
        const answer = await sse.waitFor((m) => Array.isArray(m) || (m.id === null && m.error));
        if (version === '2025-03-26') {
          assertJudgedEach(answer, 's');
          assert.deepEqual(log().slice(before), ['echo']);
        } else {
          assertRefusedWhole(answer, version);
          assert.deepEqual(log().slice(before), [], 'nothing in the batch reached the server');
        }
      } finally {
        sse.close();
      }
    });
  }
});
