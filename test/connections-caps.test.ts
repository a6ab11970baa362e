// Connection caps against lockout (issue 23 item 5, outside attack 3: F5 and F6). Half-sent
// requests reopened from a few addresses must not lock other clients out, and one IPv6 host
// (a /64) or one address spelt several ways counts as one address in every per-address cap.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { registrationKey } from '../src/auth/clients.js';
import { AuthFailures } from '../src/gateway/auth-failures.js';
import { addressKey, ClientAddresses, plainAddress } from '../src/http/client-address.js';
import { ConnectionGuard } from '../src/gateway/connections.js';

type FakeSocket = Socket & { ended: boolean };

function fakeSocket(remoteAddress: string): FakeSocket {
  const s = new EventEmitter() as unknown as FakeSocket;
  const close = () => { if (!s.ended) { s.ended = true; s.emit('close'); } };
  Object.assign(s, { remoteAddress, ended: false, end: close, destroy: close });
  return s;
}

function guarded(max: number, maxPerAddress: number, trusted: string[] = []) {
  const server = new EventEmitter() as unknown as Server;
  const addresses = new ClientAddresses(trusted);
  const guard = new ConnectionGuard(() => ({ max, maxPerAddress, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, keepAliveMs: 65_000 }), () => addresses);
  guard.attach(server);
  const connect = (address: string) => { const s = fakeSocket(address); server.emit('connection', s); return s; };
  return { guard, connect };
}

/** A complete request head on `socket`; its response stays open until `finish` is called. */
function requestOn(guard: ConnectionGuard, socket: Socket, client: string) {
  const res = new EventEmitter() as unknown as ServerResponse & { status?: number };
  Object.assign(res, { writeHead(status: number) { res.status = status; return res; }, end() { res.emit('close'); return res; } });
  const ok = guard.request({ socket, headers: {} } as IncomingMessage, res, client);
  return { ok, status: () => res.status, finish: () => res.emit('close') };
}

describe('connections that never sent a request head', () => {
  it('a gateway full of them still takes a new client (attack 3 F5)', () => {
    const { connect } = guarded(16, 4);
    const flood: FakeSocket[] = [];
    // Four addresses reopen whatever is closed, many times over.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 16; i++) flood.push(connect(`127.0.0.${2 + (i % 4)}`));
    }
    const real = connect('127.0.0.50');
    assert.equal(real.ended, false, 'the real client was refused: half-sent connections from 4 addresses lock everyone out');
    for (const s of [...flood, real]) s.destroy();
  });

  it('hold at most half of connections.max; the oldest yields to a newer one', () => {
    const { guard, connect } = guarded(16, 16);
    const flood = Array.from({ length: 12 }, (_, i) => connect(`127.0.0.${2 + i}`));
    assert.equal(guard.waitingConnections, 8);
    assert.equal(guard.connections, 8);
    assert.deepEqual(flood.map((s) => s.ended), [true, true, true, true, false, false, false, false, false, false, false, false], 'the oldest four were closed');
    assert.equal(guard.refused.idle, 4);
    for (const s of flood) s.destroy();
    assert.equal(guard.connections, 0);
    assert.equal(guard.waitingConnections, 0);
  });

  it('connections doing requests are never closed for a new one: a gateway full of them refuses it', () => {
    const { guard, connect } = guarded(8, 8);
    const busy = Array.from({ length: 8 }, (_, i) => {
      const s = connect(`127.0.0.${2 + i}`);
      assert.ok(requestOn(guard, s, s.remoteAddress!).ok);
      return s;
    });
    assert.equal(guard.waitingConnections, 0);
    const late = connect('127.0.0.50');
    assert.equal(late.ended, true);
    assert.equal(guard.refused.total, 1);
    assert.ok(busy.every((s) => !s.ended), 'no connection with a request in progress was closed');
    for (const s of busy) s.destroy();
  });

  it('a waiting connection closed for a newer one of the same address leaves that address its full share', () => {
    const { guard, connect } = guarded(4, 3);
    // Two waiting connections fill the waiting share (half of 4): the third closes the first, same address.
    const first = [connect('127.0.0.2'), connect('127.0.0.2'), connect('127.0.0.2')];
    assert.deepEqual(first.map((s) => s.ended), [true, false, false]);
    for (const s of first) s.destroy();
    assert.equal(guard.connections, 0);
    // With nothing open, the address may open max_per_address (3) again; the counts did not drift.
    const again = [connect('127.0.0.2'), connect('127.0.0.3'), connect('127.0.0.2'), connect('127.0.0.2')];
    assert.equal(guard.refused.address, 0, 'the address was refused for connections it no longer has');
    for (const s of again) s.destroy();
  });

  it('the per-address cap still holds', () => {
    const { guard, connect } = guarded(100, 4);
    const mine = Array.from({ length: 6 }, () => connect('127.0.0.2'));
    assert.equal(mine.filter((s) => !s.ended).length, 4);
    assert.equal(guard.refused.address, 2);
    for (const s of mine) s.destroy();
  });
});

describe('one key per address', () => {
  it('connections from many addresses of one IPv6 /64 share max_per_address (attack 3 F6)', () => {
    const { connect } = guarded(1000, 4);
    const sockets = Array.from({ length: 40 }, (_, i) => connect(`2001:db8:1:2::${(i + 1).toString(16)}`));
    const accepted = sockets.filter((s) => !s.ended).length;
    for (const s of sockets) s.destroy();
    assert.equal(accepted, 4, `max_per_address is 4 but one /64 held ${accepted} connections`);
  });

  it('addresses are spelt one way: case, zero compression, zone id, brackets, IPv4-mapped', () => {
    for (const a of ['2001:DB8::1', '2001:db8:0:0:0:0:0:1', '2001:db8::1%eth0', '[2001:db8::1]']) assert.equal(plainAddress(a), '2001:db8::1', a);
    assert.equal(plainAddress('::ffff:127.0.0.1'), '127.0.0.1');
    assert.equal(plainAddress('::FFFF:7f00:1'), '127.0.0.1');
    assert.equal(plainAddress('1:0:0:2:0:0:0:3'), '1:0:0:2::3');
    assert.equal(addressKey('2001:DB8:0:0:aaaa:bbbb:cccc:dddd'), '2001:db8::/64');
    assert.equal(addressKey('2001:db8:1:2:aaaa::1%eth0'), '2001:db8:1:2::/64');
    assert.equal(addressKey('::ffff:203.0.113.9'), '203.0.113.9');
    assert.equal(addressKey('203.0.113.9'), '203.0.113.9');
  });

  it('behind a trusted proxy, requests in progress count per forwarded /64 however it is spelt', () => {
    const { guard, connect } = guarded(100, 2, ['10.0.0.1']);
    const proxy = Array.from({ length: 3 }, () => connect('10.0.0.1'));
    const a = requestOn(guard, proxy[0], '2001:DB8::1');
    const b = requestOn(guard, proxy[1], '2001:db8:0:0:0:0:0:1');
    const c = requestOn(guard, proxy[2], '2001:db8::2%eth0');
    assert.deepEqual([a.ok, b.ok, c.ok], [true, true, false]);
    assert.equal(c.status(), 429);
    a.finish();
    assert.ok(requestOn(guard, proxy[2], '2001:db8::3').ok, 'a finished request frees its place');
    for (const s of proxy) s.destroy();
  });

  it('failed authentication and OAuth registration use the same key', () => {
    const reports: string[] = [];
    const failures = new AuthFailures({ limit: 2, windowMs: 60_000, report: (f) => reports.push(`${f.address} ${f.count}`) });
    assert.equal(failures.failed('2001:db8:1:2::1', 'admin', 'x'), false);
    assert.equal(failures.failed('2001:DB8:1:2:0:0:0:2', 'admin', 'x'), false);
    assert.equal(failures.failed('2001:db8:1:2::3%eth0', 'admin', 'x'), true, 'the third failure from one /64 is over the limit');
    failures.flush();
    assert.deepEqual(reports, ['2001:db8:1:2::/64 3']);
    assert.equal(registrationKey('2001:db8:1:2:aaaa::1'), addressKey('2001:db8:1:2::9'));
  });
});
