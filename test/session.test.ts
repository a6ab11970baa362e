import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { PolicySession } from '../src/proxy/session.js';
import type { Json } from '../src/proxy/messages.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import type { Charge, CounterStore } from '../src/state/types.js';

/** Memory counters whose reservations wait until the test lets them go, as a remote store's do. */
class GatedCounters implements CounterStore {
  private readonly inner = new MemoryCounterStore();
  private gates: (() => void)[] = [];
  readonly asked: Charge[] = [];
  reserve(charges: readonly Charge[], now: number): Promise<number> {
    this.asked.push(...charges);
    return new Promise((resolve) => this.gates.push(() => resolve(this.inner.reserve(charges, now))));
  }
  release(charges: readonly Charge[]): Promise<void> {
    return this.inner.release(charges);
  }
  value(key: string, now: number): Promise<number> {
    return this.inner.value(key, now);
  }
  open(): void {
    for (const go of this.gates.splice(0)) go();
  }
}

function session(counters: GatedCounters) {
  const r = validatePolicyObject({ version: '1', tools: { echo: { limits: [{ counter: 'calls', window: 'minute', max: 5, scope: 'grant' }] } } });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters });
  const toClient: Json[] = [];
  const toServer: Json[] = [];
  const s = new PolicySession({
    engine,
    identity: { sessionId: 's1', serverName: 'everything', grant: { label: 'ci', tags: [] } },
    log: pino({ level: 'silent' }),
    toClient: (m) => toClient.push(m),
    toServer: (m) => toServer.push(m),
  });
  return { s, toClient, toServer };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('a session whose upstream closes while a decision is pending', () => {
  it('answers the call once, forwards nothing and gives its reservation back', async () => {
    const counters = new GatedCounters();
    const { s, toClient, toServer } = session(counters);
    s.fromClient({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } });
    await settle();
    s.upstreamClosed('the server exited');
    counters.open();
    await settle();
    await settle();
    const answers = toClient.filter((m) => (m as { id?: unknown }).id === 7);
    assert.equal(answers.length, 1, JSON.stringify(toClient));
    assert.match(JSON.stringify(answers[0]), /unavailable: the server exited/);
    assert.deepEqual(toServer, []);
    assert.equal(counters.asked.length, 1);
    assert.equal(await counters.value(counters.asked[0].key, Date.now()), 0, 'the reservation was given back');
  });
});

describe('call timeouts with several calls in flight (one timer per session)', () => {
  it('each call runs out at its own deadline, progress moves only its own, an answered call never times out', async () => {
    const r = validatePolicyObject({ version: '1', default: 'allow' });
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    const toClient: Json[] = [];
    const toServer: Json[] = [];
    const s = new PolicySession({
      engine: new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() }),
      identity: { sessionId: 's1', serverName: 'slow', grant: { label: 'ci', tags: [] } },
      log: pino({ level: 'silent' }),
      callTimeoutMs: 3000,
      toClient: (m) => toClient.push(m),
      toServer: (m) => toServer.push(m),
    });
    const call = (id: string) => s.fromClient({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'work', arguments: {}, _meta: { progressToken: `p-${id}` } } });
    const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
    const timedOut = () => toClient.filter((m) => (m.error as { code?: number } | undefined)?.code === -32001).map((m) => m.id);
    call('a');
    call('answered');
    await sleep(1500);
    call('b');
    s.fromServer({ jsonrpc: '2.0', id: 'answered', result: { content: [] } });
    await sleep(1000);
    s.fromServer({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-a', progress: 1 } });
    // a's wait starts again at 2.5 s (due at 5.5 s), b's is due at 4.5 s. The spans are wide so that a loaded
    // machine's late wake-ups (hundreds of ms) cannot reorder them.
    // a was forwarded first: it runs out after b only because its progress moved its deadline.
    while (timedOut().length < 1) await sleep(10);
    assert.deepEqual(timedOut(), ['b']);
    while (timedOut().length < 2) await sleep(10);
    assert.deepEqual(timedOut(), ['b', 'a']);
    const cancelled = toServer.filter((m) => m.method === 'notifications/cancelled').map((m) => (m.params as { requestId: string }).requestId);
    assert.deepEqual(cancelled, ['b', 'a']);
    assert.equal(toClient.filter((m) => m.id === 'answered').length, 1);
    assert.equal(s.inFlight, 0);
  });
});

describe('the session timer with extreme and re-entrant timeouts', () => {
  const allowAll = () => {
    const r = validatePolicyObject({ version: '1', default: 'allow' });
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    return new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
  };
  const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

  it('a call timeout past what setTimeout takes (30 days) neither fires early nor spins', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    const toClient: Json[] = [];
    const s = new PolicySession({
      engine: allowAll(), identity: { sessionId: 's', serverName: 'x', grant: { label: 'g', tags: [] } }, log: pino({ level: 'silent' }),
      callTimeoutMs: 30 * 86_400_000, toClient: (m) => toClient.push(m), toServer: () => {},
    });
    s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'work', arguments: {} } });
    await sleep(100);
    process.off('warning', onWarning);
    assert.deepEqual(toClient, [], 'no timeout yet');
    assert.deepEqual(warnings, [], 'no TimeoutOverflowWarning');
    assert.equal(s.inFlight, 1);
    s.upstreamClosed('done');
  });

  it('a client that answers each timeout with a new call keeps one timer, and each of its calls times out', async () => {
    const armed: number[] = [];
    const realSetTimeout = globalThis.setTimeout;
    globalThis.setTimeout = ((fn: () => void, ms?: number) => { armed.push(ms ?? 0); return realSetTimeout(fn, ms); }) as typeof setTimeout;
    let timeouts = 0;
    let s: PolicySession;
    let n = 0;
    const call = () => s.fromClient({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name: 'work', arguments: {} } });
    try {
      s = new PolicySession({
        engine: allowAll(), identity: { sessionId: 's', serverName: 'x', grant: { label: 'g', tags: [] } }, log: pino({ level: 'silent' }),
        callTimeoutMs: 20,
        // Retries at once, inside the timeout's own answer.
        toClient: (m) => { if ((m.error as { code?: number } | undefined)?.code === -32001 && ++timeouts < 10) call(); },
        toServer: () => {},
      });
      const wait = (ms: number) => new Promise((res) => realSetTimeout(res, ms));
      call();
      while (timeouts < 10) await wait(5);
      await wait(50);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
    assert.equal(timeouts, 10);
    // One per timeout, and one more where a timer fired a little before its deadline (Node's loop
    // clock lags) and waits out the rest; timers that piled up made hundreds.
    assert.ok(armed.length <= 3 * timeouts, `${armed.length} timers armed for ${timeouts} timeouts`);
    assert.equal(s!.inFlight, 0);
  });
});

describe('a batch from the server', () => {
  it('is handled message by message: a tools/list answer in it is filtered, a tools/call answer in it settles its call', async () => {
    const r = validatePolicyObject({ version: '1', default: 'allow', hide: ['secret_*'], tools: { echo: { limits: [{ counter: 'calls', window: 'minute', max: 1, scope: 'grant' }] } } });
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
    const toClient: Json[] = [];
    const s = new PolicySession({
      engine,
      identity: { sessionId: 's1', serverName: 'lenient', grant: { label: 'ci', tags: [] } },
      log: pino({ level: 'silent' }),
      toClient: (m) => toClient.push(m),
      toServer: () => {},
    });
    s.fromClient({ jsonrpc: '2.0', id: 'l', method: 'tools/list', params: {} });
    s.fromClient({ jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'echo', arguments: {} } });
    await settle();
    s.fromServer([
      { jsonrpc: '2.0', id: 'l', result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'secret_dump', inputSchema: { type: 'object' } }] } },
      { jsonrpc: '2.0', id: 'c', error: { code: -32000, message: 'failed' } },
    ]);
    const list = toClient.find((m) => m.id === 'l') as { result: { tools: { name: string }[] } };
    assert.deepEqual(list.result.tools.map((t) => t.name), ['echo'], 'the hidden tool is not shown');
    assert.equal(s.inFlight, 0, 'both answers were matched to their requests');
    // The failed call gave its reservation back: the limit of 1 still has room.
    s.fromClient({ jsonrpc: '2.0', id: 'c2', method: 'tools/call', params: { name: 'echo', arguments: {} } });
    await settle();
    await settle();
    assert.equal(toClient.find((m) => m.id === 'c2'), undefined, 'forwarded, not denied by the limit');
  });
});
