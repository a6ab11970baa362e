import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { GatewayMetrics } from '../src/gateway/metrics.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { PolicySession } from '../src/proxy/session.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { PLANTED } from './fixtures/secrets-values.mjs';

/** A session past initialize whose client side keeps each message with the raw line it was sent with. */
function session(policy: Json) {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
  const sent: { m: Json; raw?: string }[] = [];
  const observed: unknown[] = [];
  const s = new PolicySession({
    engine, callTimeoutMs: 0,
    identity: { sessionId: 's', serverName: 'srv', grant: { label: 'g', tags: [] } },
    log: pino({ level: 'silent' }),
    toClient: (m, raw) => sent.push({ m, raw }),
    toServer: () => {},
    observe: { decision() {}, upstream() {}, result: (tool, redacted, facts) => observed.push({ tool, redacted: Object.fromEntries(redacted), withheld: facts?.withheld }) },
  });
  s.fromClient({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
  s.fromServer({ jsonrpc: '2.0', id: 'i', result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } } });
  const call = (id: number, text: string) => {
    s.fromClient({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'read', arguments: {} } });
    const answer = { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } };
    s.fromServer(answer, JSON.stringify(answer));
    return sent.find((x) => x.m.id === id)!;
  };
  return { s, sent, observed, call };
}

describe('result policy in the session', () => {
  it('a changed answer goes without the server\'s raw line (which still holds the secret); an unchanged one keeps it', () => {
    const t = session({ version: '1', default: 'allow', results: { redact: ['secrets'] } });
    const secret = t.call(1, `key ${PLANTED.aws}`);
    assert.equal(secret.raw, undefined);
    assert.ok(!JSON.stringify(secret.m).includes(PLANTED.aws));
    const plain = t.call(2, 'nothing to see');
    assert.equal(plain.raw, JSON.stringify({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'nothing to see' }] } }));
    assert.deepEqual(t.observed, [{ tool: 'read', redacted: { 'aws-access-key': 1 }, withheld: undefined }]);
  });

  it('a withheld result still counts against the limits: the upstream ran', () => {
    const t = session({
      version: '1', default: 'allow',
      tools: { read: { limits: [{ counter: 'reads', window: 'hour', max: 1 }], results: { max_bytes: 5, on_oversize: 'deny' } } },
    });
    const first = t.call(1, 'far too long a result');
    assert.match(JSON.stringify(first.m), /RESULT WITHHELD/);
    const second = t.call(2, 'ok');
    assert.match(JSON.stringify(second.m), /POLICY DENIED/, 'the limit taken by the withheld call stands');
  });

  it('a logging notification is redacted on its way to the client', () => {
    const t = session({ version: '1', default: 'allow', results: { redact: ['secrets'] } });
    const note = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `jwt ${PLANTED.jwt}` } };
    t.s.fromServer(note, JSON.stringify(note));
    const out = t.sent.at(-1)!;
    assert.equal(out.raw, undefined);
    assert.deepEqual(out.m.params, { level: 'info', data: 'jwt [REDACTED jwt]' });
  });
});

describe('result policy metrics', () => {
  it('counts redactions by kind and actions by name, never values', async () => {
    const metrics = new GatewayMetrics();
    metrics.resultFacts('srv', new Map([['aws-access-key', 2], ['jwt', 1]]), { redacted: new Map(), flagged: ['/results/flag_if/0'], cut: { bytes: 10, total: 20 } });
    const text = await metrics.registry.metrics();
    assert.match(text, /toolgate_result_redactions_total\{server="srv",kind="aws-access-key"\} 2/);
    assert.match(text, /toolgate_result_redactions_total\{server="srv",kind="jwt"\} 1/);
    assert.match(text, /toolgate_result_actions_total\{server="srv",action="cut"\} 1/);
    assert.match(text, /toolgate_result_actions_total\{server="srv",action="flagged"\} 1/);
  });
});
