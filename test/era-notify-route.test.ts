// A server notification reaches a 2026-07-28 request only when it is tied to it (its progress
// token). Under serve the clients of one grant share an internal session, so a log line with no
// request named, arriving while another client's request is the only one open, must not be
// handed to that client (it was about client B's finished call, or about nobody).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { ModernFront, type InternalSession, type ModernExchange } from '../src/era/front.js';
import type { Envelope } from '../src/era/envelope.js';
import type { Id, Json } from '../src/proxy/messages.js';

const ENVELOPE = { version: '2026-07-28', capabilities: {}, clientInfo: { name: 't', version: '1' } } satisfies Envelope;

class Exchange implements ModernExchange {
  notes: Json[] = [];
  answers: Json[] = [];
  answer(m: Json): void { this.answers.push(m); }
  notify(m: Json): void { this.notes.push(m); }
}

/** A session as PolicySession is toward Streamable HTTP: "the" related request is the only one open. */
function harness(general?: (m: Json) => void) {
  const sent: Json[] = [];
  const open = new Set<Id>();
  const front = new ModernFront({ serverName: 's', log: pino({ level: 'silent' }), ...(general ? { general } : {}) });
  const session: InternalSession & { relatedRequest(m: Json): Id | undefined } = {
    fromClient(m) {
      const msg = m as Json;
      sent.push(msg);
      if (msg.method === 'initialize') queueMicrotask(() => front.fromSession({ jsonrpc: '2.0', id: msg.id as Id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'up', version: '1' } } }));
      else if (msg.id !== undefined && msg.method) open.add(msg.id as Id);
    },
    clientGone() {},
    relatedRequest: () => (open.size === 1 ? [...open][0] : undefined),
  };
  front.attach(session);
  const answer = (id: Id) => { open.delete(id); front.fromSession({ jsonrpc: '2.0', id, result: { content: [] } }); };
  return { front, sent, answer };
}

const call = (id: number, token?: string): Json => ({
  jsonrpc: '2.0', id, method: 'tools/call',
  params: { name: 'x', arguments: {}, _meta: { ...(token ? { progressToken: token } : {}) } },
});
const LOG: Json = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: "B's secret log line" } };

describe('ModernFront: notifications reach only the request they are about', () => {
  it("client A does not get the log of client B's call while A's request is the only one open", async () => {
    const { front, sent, answer } = harness();
    const a = new Exchange();
    const b = new Exchange();
    await front.request(call(1), ENVELOPE, a);
    await front.request(call(1), ENVELOPE, b);
    const [innerA, innerB] = sent.filter((m) => m.method === 'tools/call').map((m) => m.id as Id);
    answer(innerB); // B's call finished; its server's late log line comes now, A's call still open
    front.fromSession(LOG);
    assert.equal(b.answers.length, 1);
    assert.deepEqual(a.notes, [], "A received a notification about B's call");
    assert.deepEqual(b.notes, []);
    answer(innerA);
    assert.equal(a.answers.length, 1);
  });

  it('progress still reaches its own request, with the token the client gave', async () => {
    const { front, sent } = harness();
    const a = new Exchange();
    const b = new Exchange();
    await front.request(call(7, 'mine'), ENVELOPE, a);
    await front.request(call(7, 'mine'), ENVELOPE, b);
    const innerTokenB = ((sent.filter((m) => m.method === 'tools/call')[1].params as Json)._meta as Json).progressToken;
    front.fromSession({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: innerTokenB, progress: 1 } });
    assert.deepEqual(a.notes, []);
    assert.deepEqual(b.notes, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'mine', progress: 1 } }]);
  });

  it('under run (one client) an untied notification goes to that client, not onto a request', async () => {
    const general: Json[] = [];
    const { front } = harness((m) => general.push(m));
    const a = new Exchange();
    await front.request(call(1), ENVELOPE, a);
    front.fromSession(LOG);
    assert.deepEqual(general, [LOG]);
    assert.deepEqual(a.notes, []);
  });
});
