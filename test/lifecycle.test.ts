import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { HttpError } from '../src/http/errors.js';
import { Lifecycle } from '../src/gateway/lifecycle.js';
import type { StateHealth, StateStore } from '../src/state/types.js';
import { until } from './helpers/approvals.js';

/** What /readyz answered: status and body. */
function probe(lifecycle: Lifecycle): { status: number; body: Record<string, unknown> } {
  let status = 0;
  let text = '';
  const res = { writeHead: (s: number) => { status = s; return res; }, end: (t: string) => { text = t; } } as unknown as ServerResponse;
  lifecycle.readyz(res);
  return { status, body: JSON.parse(text) as Record<string, unknown> };
}

/** A state store whose grants cannot be read until `reachable` is set, and whose health is what the test says. */
function store(): { state: StateStore; set: (reachable: boolean, health: StateHealth['status']) => void } {
  let reachable = false;
  let health: StateHealth['status'] = 'unavailable';
  const state = {
    kind: 'redis',
    grants: { list: async () => { if (!reachable) throw new Error('Redis at 127.0.0.1:1/0 is unreachable'); return []; } },
    flags: { listKillSwitches: async () => [] },
    health: () => ({ kind: 'redis', status: health }),
  } as unknown as StateStore;
  return { state, set: (r, h) => { reachable = r; health = h; } };
}

describe('readiness and the refusal of new work at a stop', () => {
  it('/readyz is 503 until grants and kill switches are loaded, stays 200 when the store degrades after, and is 503 once a stop begins', async () => {
    const { state, set } = store();
    const http = createServer();
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const lifecycle = new Lifecycle({ state, log: pino({ level: 'silent' }), sessions: new Map(), http, warnings: () => [], servers: () => 0 });
    const loaded = lifecycle.load();
    await until(() => /cannot load grants and kill switches/.test(String(probe(lifecycle).body.reason)), 'the failed load to show');
    const starting = probe(lifecycle);
    assert.equal(starting.status, 503);
    assert.equal(starting.body.status, 'starting');
    set(true, 'ok');
    await loaded;
    assert.deepEqual(probe(lifecycle), { status: 200, body: { status: 'ready', state: { kind: 'redis', status: 'ok' } } });
    // Redis goes away after start: still ready (unlimited calls pass; /healthz says degraded).
    set(false, 'unavailable');
    assert.equal(probe(lifecycle).status, 200);
    await lifecycle.drain(0, '0s');
    const stopping = probe(lifecycle);
    assert.equal(stopping.status, 503);
    assert.equal(stopping.body.status, 'stopping');
    assert.equal(http.listening, false, 'the listener is closed');
  });

  it('while stopping, a POST carrying a request and a GET are refused with 503 and JSON-RPC -32050 (retryable); notifications, answers and DELETE pass', async () => {
    const { state } = store();
    const http = createServer();
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const lifecycle = new Lifecycle({ state, log: pino({ level: 'silent' }), sessions: new Map(), http, warnings: () => [], servers: () => 0 });
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } };
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } };
    const answer = { jsonrpc: '2.0', id: 'e1', result: { action: 'accept' } };
    lifecycle.admit('POST', call); // not stopping: anything passes
    await lifecycle.drain(0, '0s');
    for (const [method, body] of [['POST', call], ['POST', [cancel, call]], ['GET', undefined]] as const) {
      assert.throws(() => lifecycle.admit(method, body), (err: unknown) => {
        assert.ok(err instanceof HttpError);
        assert.equal(err.status, 503);
        assert.equal(err.code, -32050);
        assert.equal(err.headers['retry-after'], '1');
        assert.deepEqual(err.data, { retryable: true, reason: 'restarting', retryAfterSeconds: 1 });
        return true;
      }, `${method} ${JSON.stringify(body)}`);
    }
    lifecycle.admit('POST', cancel);
    lifecycle.admit('POST', [cancel, answer]);
    lifecycle.admit('DELETE');
  });
});
