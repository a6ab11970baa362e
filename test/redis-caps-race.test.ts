// Regression (issue 23, attack 3 F1): approval.max_pending and the OAuth registration caps are
// counted and written in one atomic step of the store, so concurrent requests (one instance or a
// fleet) cannot all read the same count and all pass.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { Approvals } from '../src/approvals/index.js';
import { ClientRegistry } from '../src/auth/clients.js';
import { openRedisState } from '../src/state/redis.js';
import { TestRedis } from './helpers/redis.js';

const redis = await TestRedis.start();
after(() => redis.stop());
const log = pino({ level: 'silent' });

describe('caps that must hold under concurrency on Redis', () => {
  it('approval.max_pending: 60 concurrent held calls of one grant (different args) open at most max_pending', async () => {
    const s = openRedisState(`${redis.url}/0?prefix=race-ap-${process.pid}`);
    await s.begin?.(() => {});
    const approvals = new Approvals({ store: s.approvals, log });
    const settings = { timeoutMs: 300_000, via: ['cli'], mode: 'hold' as const, validForMs: 600_000, maxPending: 5 };
    const held = (n: number) => ({ server: 's', grant: 'g', grantId: 'g1', session: 'x', tool: 't', args: { n }, rule: '/r', reason: 'why', settings });
    const results = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => approvals.open(held(i))));
    const opened = results.filter((r) => r.status === 'fulfilled').length;
    approvals.close();
    await s.close();
    assert.ok(opened <= 5, `max_pending is 5 but ${opened} held calls were opened`);
  });

  it('OAuth registration: 60 concurrent registrations from one address make at most registrations_per_address pending clients', async () => {
    const s = openRedisState(`${redis.url}/0?prefix=race-oa-${process.pid}`);
    await s.begin?.(() => {});
    const registry = new ClientRegistry(s.oauth, () => ({ maxPending: 20, pendingMs: 600_000, perAddress: 3, windowMs: 3_600_000 }), log);
    const body = JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], client_name: 'x' });
    const register = async () => {
      const req = Readable.from([Buffer.from(body)]) as unknown as IncomingMessage;
      Object.assign(req, { headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, method: 'POST', socket: { remoteAddress: '127.0.0.9' } });
      let status = 0;
      const res = { writeHead(code: number) { status = code; return res; }, setHeader() {}, end() {}, statusCode: 0 } as unknown as ServerResponse;
      try { await registry.register(req, res); } catch { return 0; }
      return status || (res as unknown as { statusCode: number }).statusCode;
    };
    const codes = await Promise.all(Array.from({ length: 60 }, register));
    const pending = await s.oauth.count('client:pending:', Date.now());
    await s.close();
    assert.ok(pending <= 3, `registrations_per_address is 3 but ${pending} clients were registered from one address (codes ${codes.join(',')})`);
  });
});
