// Issue 23 items 3, 5 and 6: the pieces behind the caps, on their own.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { registrationKey } from '../src/auth/clients.js';
import { ClientAddresses, isAddressOrCidr } from '../src/http/client-address.js';
import { EventBudget } from '../src/gateway/event-budget.js';
import { GatewayMetrics } from '../src/gateway/metrics.js';
import { MemoryApprovalStore } from '../src/state/memory-approvals.js';
import type { Approval } from '../src/state/types.js';
import { StreamableSession } from '../src/gateway/streamable.js';

const req = (remoteAddress: string, xff?: string | string[]) => ({ socket: { remoteAddress }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;

describe('client addresses behind trusted proxies', () => {
  it('without trusted proxies, X-Forwarded-For is never believed', () => {
    assert.equal(new ClientAddresses([]).of(req('10.0.0.5', '203.0.113.9')), '10.0.0.5');
    assert.equal(new ClientAddresses([]).of(req('::ffff:10.0.0.5')), '10.0.0.5', 'an IPv4 client on a dual-stack socket');
  });

  it('from a trusted proxy, the right-most address that is not a trusted proxy is the client', () => {
    const a = new ClientAddresses(['10.0.0.0/8', '2001:db8::1']);
    assert.equal(a.of(req('10.0.0.5', '203.0.113.9')), '203.0.113.9');
    assert.equal(a.of(req('10.0.0.5', '198.51.100.1, 203.0.113.9, 10.1.2.3')), '203.0.113.9', 'a chain of trusted proxies is walked, what the client wrote is not believed');
    assert.equal(a.of(req('10.0.0.5', ['198.51.100.1', '203.0.113.9:4711'])), '203.0.113.9', 'several headers, and a port');
    assert.equal(a.of(req('2001:db8::1', '[2001:db8::42]:443')), '2001:db8::42');
    assert.equal(a.of(req('10.0.0.5', 'evil\u001b[2J, 10.1.2.3')), '10.1.2.3', 'a hop that is no address ends the walk at the last believed one');
    assert.equal(a.of(req('10.0.0.5')), '10.0.0.5', 'no header: the proxy itself');
    assert.equal(a.of(req('192.0.2.7', '203.0.113.9')), '192.0.2.7', 'an untrusted peer is the client whatever it says');
  });

  it('trusted_proxies entries are addresses or CIDRs', () => {
    for (const ok of ['10.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']) assert.ok(isAddressOrCidr(ok), ok);
    for (const bad of ['10.0.0.0/33', 'proxy.example', '10.0.0.1/8/2', '']) assert.ok(!isAddressOrCidr(bad), bad);
  });

  it('registrations are throttled per IPv4 address and per IPv6 /64', () => {
    assert.equal(registrationKey('203.0.113.9'), '203.0.113.9');
    assert.equal(registrationKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(registrationKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
    assert.equal(registrationKey('2001:db8::1'), '2001:db8::/64');
  });
});

describe('SSE events kept for resumption', () => {
  const session = (budget: EventBudget, id: string) => new StreamableSession({
    sessionId: id, retryMs: 1000, maxEvents: 1000, budget, onMessage: () => {}, onClientGone: () => {}, onEnded: () => {},
  });
  const note = (n: number) => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(1000), n } });

  it('are bounded in bytes per session and across sessions; the session keeping most gives up its oldest first; closing releases all', () => {
    const budget = new EventBudget(10_000, 15_000);
    const a = session(budget, 'a');
    const b = session(budget, 'b');
    // Server messages about no request, with no GET stream open: kept for a client that resumes.
    for (let i = 0; i < 50; i++) a.send(note(i), undefined, undefined);
    assert.ok(a.bufferedBytes <= 10_000 && a.bufferedBytes > 8_000, `per session: ${a.bufferedBytes}`);
    for (let i = 0; i < 8; i++) b.send(note(i), undefined, undefined);
    assert.ok(budget.bytes <= 15_000, `in total: ${budget.bytes}`);
    assert.ok(b.bufferedBytes > 7_000, 'the smaller session kept its events');
    assert.equal(budget.bytes, a.bufferedBytes + b.bufferedBytes);
    assert.equal(budget.events, a.bufferedEvents + b.bufferedEvents);
    a.close();
    b.close();
    assert.equal(budget.bytes, 0);
    assert.equal(budget.events, 0);
  });
});

describe('the pending approvals gauge', () => {
  it('is kept from the change feed: a scrape never lists the store', async () => {
    const store = new MemoryApprovalStore();
    const approval = (id: string): Approval => ({
      id, server: 's', grant: 'g', session: 'x', tool: 't', args: {}, binding: `b-${id}`, rule: '/r', reason: 'why', via: ['cli'],
      requestedAt: 1, expiresAt: Date.now() + 60_000, validForMs: 1000, status: 'pending',
    });
    store.create(approval('before'));
    let lists = 0;
    const list = store.list.bind(store);
    store.list = (opts) => { lists++; return list(opts); };
    const metrics = new GatewayMetrics();
    const stop = metrics.followApprovals(store, (err) => { throw err; });
    const gauge = async () => Number(/^toolgate_pending_approvals (\d+)$/m.exec(await metrics.registry.metrics())![1]);
    await new Promise((r) => setImmediate(r));
    assert.equal(await gauge(), 1, 'what was pending at start');
    store.create(approval('a'));
    store.create(approval('b'));
    assert.equal(await gauge(), 3);
    store.decide('a', { status: 'denied', by: 'cli:x', at: Date.now() });
    for (let i = 0; i < 5; i++) assert.equal(await gauge(), 2);
    assert.equal(lists, 1, 'the store was listed once, at start, not per scrape');
    stop();
  });
});
