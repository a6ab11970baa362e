// A 2026-07-28 client under serve cancels by closing its stream. The cancelled request usually
// gets no answer (a server need not answer a cancelled request, and one held for approval or
// waiting in a pool's queue is never sent), so the front must forget it when its client goes:
// otherwise each given-up request keeps its exchange (the HTTP response) for as long as the
// grant's internal session lives, and a client that opens and drops calls grows the gateway's
// memory without bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { ModernFront, type InternalSession, type ModernExchange } from '../src/era/front.js';
import type { Envelope } from '../src/era/envelope.js';
import type { Id, Json } from '../src/proxy/messages.js';

const ENVELOPE = { version: '2026-07-28', capabilities: {}, clientInfo: { name: 't', version: '1' } } satisfies Envelope;

class Exchange implements ModernExchange {
  answers: Json[] = [];
  notes: Json[] = [];
  answer(m: Json): void { this.answers.push(m); }
  notify(m: Json): void { this.notes.push(m); }
}

describe('ModernFront: a client that goes away', () => {
  it('forgets its requests (a thousand given-up calls leave nothing behind); a late answer or progress for one reaches no exchange', async () => {
    const sent: Json[] = [];
    const gone: Id[] = [];
    const front = new ModernFront({ serverName: 's', log: pino({ level: 'silent' }) });
    const session: InternalSession = {
      fromClient(m) {
        const msg = m as Json;
        sent.push(msg);
        if (msg.method === 'initialize') queueMicrotask(() => front.fromSession({ jsonrpc: '2.0', id: msg.id as Id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'up', version: '1' } } }));
      },
      clientGone(id) { gone.push(id); },
    };
    front.attach(session);
    const exchanges: Exchange[] = [];
    for (let i = 0; i < 1000; i++) {
      const x = new Exchange();
      exchanges.push(x);
      await front.request({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {}, _meta: { progressToken: 'p' } } }, ENVELOPE, x);
      front.gone(x);
    }
    assert.equal(gone.length, 1000, 'each request was cancelled toward the session');
    const internal = front as unknown as { tracked: Map<string, unknown>; tokens: Map<string, unknown> };
    assert.equal(internal.tracked.size, 0, 'no request of a gone client is kept');
    assert.equal(internal.tokens.size, 0, 'nor its progress token');
    const first = sent.find((m) => m.method === 'tools/call')!;
    front.fromSession({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: (first.params as { _meta: { progressToken: string } })._meta.progressToken, progress: 1 } });
    front.fromSession({ jsonrpc: '2.0', id: first.id as Id, result: { content: [] } });
    assert.ok(exchanges.every((x) => x.answers.length === 0 && x.notes.length === 0));
  });
});
