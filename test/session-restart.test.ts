import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Approvals } from '../src/approvals/index.js';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { PolicySession } from '../src/proxy/session.js';
import { MemoryApprovalStore } from '../src/state/memory-approvals.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { until } from './helpers/approvals.js';

const log = pino({ level: 'silent' });

/** An initialized session whose `guarded` tool waits for approval, on a memory approval store the test can slow down. */
function held(store = new MemoryApprovalStore()) {
  const r = validatePolicyObject({ version: '1', default: 'allow', tools: { guarded: { action: 'approve' } } });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const approvals = new Approvals({ store, log });
  const toClient: Json[] = [];
  const toServer: Json[] = [];
  const s = new PolicySession({
    engine: new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() }),
    identity: { sessionId: 's1', serverName: 'srv', grant: { id: 'g1', label: 'ci', tags: [] } },
    log, approvals,
    toClient: (m) => toClient.push(m),
    toServer: (m) => toServer.push(m),
  });
  s.fromClient({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
  s.fromServer({ jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } } });
  toServer.length = 0;
  const call = (id: number, n: number) => s.fromClient({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'guarded', arguments: { n } } });
  const answer = (id: number) => toClient.find((m) => m.id === id) as { error?: { code: number; message: string; data?: unknown }; result?: Json } | undefined;
  const forwarded = () => toServer.filter((m) => m.method === 'tools/call').length;
  return { s, store, approvals, call, answer, forwarded, toServer };
}

describe('a session at a gateway stop', () => {
  it('a call waiting for approval is answered "restarting, call again"; its approval stays pending, and approved, the same call made again is forwarded once', async () => {
    const t = held();
    t.call(1, 7);
    const pending = await until(async () => (await t.store.list({ status: 'pending' }))[0], 'the approval');
    assert.equal(t.s.restart(), 1);
    const first = await until(() => t.answer(1), 'the answer');
    const text = (first.result!.content as { text: string }[])[0].text;
    assert.match(text, new RegExp(`^\\[GATEWAY RESTARTING\\] The gateway is restarting, so this call was not forwarded: call again\\. Approval ${pending.id} stays pending`));
    assert.deepEqual((first.result!._meta as Json)['dev.toolgate/decision'], { rule: '(restart)', retryAfterSeconds: 1, approval: { id: pending.id, status: 'pending' } });
    assert.equal((await t.store.get(pending.id))?.status, 'pending');
    assert.equal(t.forwarded(), 0);
    t.approvals.close();

    // The gateway is back (a new session on the same store) and the approval was granted meanwhile.
    await t.store.decide(pending.id, { status: 'approved', by: 'cli:alice', at: Date.now() });
    const back = held(t.store);
    back.call(2, 7);
    await until(() => back.forwarded() === 1, 'the call made again to be forwarded');
    assert.equal((await t.store.get(pending.id))?.status, 'used');
    back.call(3, 7);
    await until(async () => (await t.store.list({ status: 'pending' })).length === 1, 'a new approval for the third call');
    assert.equal(back.forwarded(), 1, 'forwarded once');
    back.approvals.close();
  });

  it('an approved call cancelled while its approval is being taken is not forwarded', async () => {
    const t = held();
    t.call(1, 8);
    const pending = await until(async () => (await t.store.list({ status: 'pending' }))[0], 'the approval');
    // Taking the approval waits until the test lets it go.
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => { letGo = resolve; });
    const consume = t.store.consume.bind(t.store);
    let taking = false;
    // The memory store answers at once; a slower store (SQLite, Redis) leaves this window.
    (t.store as { consume: (id: string, now: number) => boolean | Promise<boolean> }).consume = async (id, now) => { taking = true; await gate; return consume(id, now); };
    await t.approvals.decide(pending.id, true, 'cli:alice', 'cli');
    await until(() => taking, 'the release to take the approval');
    t.s.fromClient({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    letGo();
    await until(async () => (await t.store.get(pending.id))?.status === 'used', 'the approval to be taken');
    await new Promise((r) => setImmediate(r));
    assert.equal(t.forwarded(), 0, 'the cancelled call is not forwarded');
    t.approvals.close();
  });

  it('past the grace, a forwarded call is cancelled upstream with an error saying it may have run; a call never forwarded gets the retryable -32050', async () => {
    const t = held();
    t.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'free', arguments: {} } });
    await until(() => t.forwarded() === 1, 'the free call to be forwarded');
    t.call(2, 9);
    await until(async () => (await t.store.list({ status: 'pending' }))[0], 'the approval');
    assert.equal(t.s.cancelInFlight('the gateway is stopping and the request did not finish within shutdown.grace (0s)'), 1);
    assert.deepEqual(t.toServer.at(-1), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'toolgate: the gateway is stopping and the request did not finish within shutdown.grace (0s)' } });
    assert.match(t.answer(1)!.error!.message, /shutdown\.grace \(0s\): the request was cancelled upstream\. The call had been sent, so it may have run/);
    assert.deepEqual(t.answer(2)!.error, { code: -32050, message: 'The gateway is restarting, so this call was not forwarded: call again.', data: { retryable: true, reason: 'restarting', retryAfterSeconds: 1 } });
    assert.equal(t.forwarded(), 1);
    t.approvals.close();
  });
});
