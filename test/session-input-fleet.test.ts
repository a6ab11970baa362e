import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import { Approvals } from '../src/approvals/index.js';
import { AuditLog } from '../src/audit/index.js';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { RequestStates } from '../src/input/request-state.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { PolicySession } from '../src/proxy/session.js';
import { openRedisState } from '../src/state/redis.js';
import { TestRedis } from './helpers/redis.js';
import { tempDir } from './helpers/toolgate.js';

/**
 * Two instances of a fleet on one Redis (each its own audit log, as on two hosts): a retry that
 * continues a call may reach either. Its state is checked with the shared key, used once across
 * both, and the call is charged once on the shared counters.
 */

const log = pino({ level: 'silent' });
const redis = await TestRedis.start();
const closing: (() => unknown)[] = [];
after(async () => { for (const c of closing) await c(); await redis.stop(); });
let prefixes = 0;

const POLICY = { version: '1', default: 'allow', tools: {
  confirm_delete: { limits: [{ counter: 'deletes', window: 'day', max: 2, scope: 'grant' }] },
  delete_file: { action: 'approve', approval: { via: ['client'] } },
} };

function instance(url: string) {
  const r = validatePolicyObject(POLICY);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const state = openRedisState(url);
  const audit = new AuditLog(join(tempDir(), 'audit.db'));
  const approvals = new Approvals({ store: state.approvals, audit, log });
  closing.push(() => approvals.close(), () => audit.close(), () => state.close());
  const toClient: Json[] = [];
  const toServer: Json[] = [];
  const s = new PolicySession({
    engine: new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: state.counters, flags: state.flags }),
    audit, approvals, log, clientEra: 'modern', requestStates: new RequestStates(state.requestStates),
    identity: { sessionId: 'stateless', serverName: 'files', grant: { id: 'gr_1', label: 'ci', tags: [] } },
    toClient: (m) => toClient.push(m),
    toServer: (m) => toServer.push(m),
  });
  s.fromClient({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'v2-client', version: '1' } } });
  s.fromServer({ jsonrpc: '2.0', id: 'init', result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'files', version: '1' } } });
  s.fromClient({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const calls = () => toServer.filter((m) => m.method === 'tools/call');
  const answer = async (id: unknown) => {
    for (let i = 0; i < 400; i++) {
      const found = toClient.find((m) => m.id === id && ('result' in m || 'error' in m));
      if (found) return found as { result: Json };
      await new Promise((res) => setTimeout(res, 5));
    }
    throw new Error(`no answer to ${String(id)}: ${JSON.stringify(toClient)}`);
  };
  const forwarded = async (n: number) => { for (let i = 0; i < 400 && calls().length < n; i++) await new Promise((res) => setTimeout(res, 5)); return calls(); };
  const rows = () => { audit.flush(); return audit.query({ kind: 'call' }); };
  return { s, calls, answer, forwarded, rows };
}

const call = (id: unknown, name: string, args: Json, extra: Json = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } });
const ASK = { resultType: 'input_required', inputRequests: { q: { method: 'elicitation/create', params: { mode: 'form', message: 'Sure?', requestedSchema: { type: 'object', properties: {} } } } }, requestState: 'theirs' };
const answers = { q: { action: 'accept', content: {} } };

describe('input_required across a fleet on Redis', () => {
  it('the same retry sent to both instances at once runs once', async () => {
    const url = `${redis.url}/0?prefix=fleet${process.pid}-${++prefixes}`;
    const [a, b] = [instance(url), instance(url)];
    a.s.fromClient(call(1, 'confirm_delete', { path: '/x' }));
    await a.forwarded(1);
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: ASK });
    const state = (await a.answer(1)).result.requestState;
    a.s.fromClient(call(2, 'confirm_delete', { path: '/x' }, { inputResponses: answers, requestState: state }));
    b.s.fromClient(call(2, 'confirm_delete', { path: '/x' }, { inputResponses: answers, requestState: state }));
    // One is refused; the other is forwarded (its answer would be the upstream's): wait for both to happen.
    const total = () => a.calls().length + b.calls().length;
    for (let i = 0; i < 400 && total() < 2; i++) await new Promise((res) => setTimeout(res, 5));
    const refusal = (inst: typeof a) => inst.answer(2).then((r) => /already used/.test(JSON.stringify(r)), () => false);
    assert.deepEqual((await Promise.all([refusal(a), refusal(b)])).filter(Boolean), [true], 'exactly one was refused');
    assert.equal(total(), 2, 'the first round and one retry reached an upstream');
  });

  it('a retry at the other instance: forwarded there uncharged, with a row there naming the call it continues', async () => {
    const url = `${redis.url}/0?prefix=fleet${process.pid}-${++prefixes}`;
    const [a, b] = [instance(url), instance(url)];
    a.s.fromClient(call(1, 'confirm_delete', { path: '/x' }));
    await a.forwarded(1);
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: ASK });
    const state = (await a.answer(1)).result.requestState;
    b.s.fromClient(call(7, 'confirm_delete', { path: '/x' }, { inputResponses: answers, requestState: state }));
    const [sent] = await b.forwarded(1);
    assert.equal((sent.params as Json).requestState, 'theirs');
    b.s.fromServer({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    await b.answer(7);
    const [first] = a.rows();
    assert.equal(first.outcome, 'input_required');
    const [there] = b.rows();
    assert.equal(there.decision, 'allow');
    assert.equal(there.message, `continues call ${first.event_id} (round 2; charged where it began)`);
    assert.equal(there.outcome, 'result after 2 rounds');
    // Charged once: one more call fits under the limit of 2, the one after does not.
    b.s.fromClient(call(8, 'confirm_delete', { path: '/y' }));
    await b.forwarded(2);
    b.s.fromClient(call(9, 'confirm_delete', { path: '/z' }));
    assert.match(JSON.stringify((await b.answer(9)).result), /Limit reached: 2 calls per day/);
  });

  it('via: client — asked at one instance, approved by the retry at the other', async () => {
    const url = `${redis.url}/0?prefix=fleet${process.pid}-${++prefixes}`;
    const [a, b] = [instance(url), instance(url)];
    a.s.fromClient(call(1, 'delete_file', { path: '/x' }));
    const asked = (await a.answer(1)).result;
    assert.equal(asked.resultType, 'input_required');
    b.s.fromClient(call(2, 'delete_file', { path: '/x' }, { inputResponses: { 'dev.toolgate/approval': { action: 'accept', content: { decision: 'approve' } } }, requestState: asked.requestState }));
    const [sent] = await b.forwarded(1);
    assert.deepEqual(sent.params, { name: 'delete_file', arguments: { path: '/x' } });
    assert.deepEqual(a.calls(), []);
  });
});
