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
import { openMemoryState } from '../src/state/memory.js';
import { tempDir } from './helpers/toolgate.js';

const log = pino({ level: 'silent' });
const open: { close(): void }[] = [];
after(() => { for (const o of open) o.close(); });

function compiled(policy: unknown): CompiledPolicy {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return new CompiledPolicy(r.policy, r.hash);
}

/** A modern client's session (what era-front opens for it) over a real engine, approvals, audit log and memory state. */
async function harness(policy: unknown, clientEra: 'modern' | 'legacy' = 'modern') {
  const state = openMemoryState();
  const engine = new Engine({ policy: compiled(policy), counters: state.counters, flags: state.flags });
  const audit = new AuditLog(join(tempDir(), 'audit.db'));
  const approvals = new Approvals({ store: state.approvals, audit, log });
  open.push(audit, approvals);
  const toClient: Json[] = [];
  const toServer: Json[] = [];
  const s = new PolicySession({
    engine, audit, approvals, log, clientEra,
    identity: { sessionId: 's1', serverName: 'files', grant: { id: 'gr_1', label: 'ci', tags: [] } },
    requestStates: new RequestStates(state.requestStates),
    toClient: (m) => toClient.push(m),
    toServer: (m) => toServer.push(m),
  });
  // The handshake a modern client's adapter synthesizes: its capabilities (elicitation) from the request's _meta.
  s.fromClient({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'v2-client', version: '1' } } });
  s.fromServer({ jsonrpc: '2.0', id: 'init', result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'files', version: '1' } } });
  s.fromClient({ jsonrpc: '2.0', method: 'notifications/initialized' });
  toClient.length = 0;
  toServer.length = 0;
  /** Sends a message and waits until the session has answered or forwarded something. */
  const send = async (m: Json) => {
    const before = toClient.length + toServer.length;
    s.fromClient(m);
    for (let i = 0; i < 200 && toClient.length + toServer.length === before; i++) await new Promise((r) => setTimeout(r, 5));
  };
  const answer = (id: unknown) => toClient.find((m) => m.id === id) as { result?: Json; error?: Json } | undefined;
  const text = (id: unknown) => JSON.stringify(answer(id));
  const callRows = () => { audit.flush(); return audit.query({ kind: 'call' }); };
  return { s, state, engine, audit, approvals, toClient, toServer, send, answer, text, callRows };
}

const call = (id: unknown, name: string, args: Json, extra: Json = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } });

const APPROVE = { version: '1', default: 'allow', tools: {
  delete_file: { action: 'approve', approval: { via: ['client', 'cli'] }, limits: [{ counter: 'deletes', window: 'minute', max: 1, scope: 'grant' }] },
} };

describe('via: client approval for a modern client (input_required)', () => {
  it('asks in the answer, and the retry with the user\'s approval is decided again, charged once, audited once and forwarded once', async () => {
    const h = await harness(APPROVE);
    await h.send(call(1, 'delete_file', { path: '/srv/a' }));
    const asked = h.answer(1)!.result!;
    assert.equal(asked.resultType, 'input_required', h.text(1));
    const input = (asked.inputRequests as Record<string, { method: string; params: Json }>)['dev.toolgate/approval'];
    assert.equal(input.method, 'elicitation/create');
    assert.equal(input.params.mode, 'form');
    assert.match(input.params.message as string, /holding a call to "delete_file" for approval [a-z2-9]{10}[\s\S]*"\/srv\/a"/);
    assert.equal(typeof asked.requestState, 'string');
    assert.deepEqual(h.toServer, [], 'nothing is forwarded while the call waits for its approval');

    const retry = { inputResponses: { 'dev.toolgate/approval': { action: 'accept', content: { decision: 'approve' } } }, requestState: asked.requestState };
    await h.send(call(2, 'delete_file', { path: '/srv/a' }, retry));
    assert.equal(h.toServer.length, 1, h.text(2));
    assert.deepEqual(h.toServer[0], call(2, 'delete_file', { path: '/srv/a' }), 'the upstream gets the call alone: no inputResponses, no requestState');
    h.s.fromServer({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'deleted' }] } });
    assert.match(h.text(2), /deleted/);

    // The same retry again (a replay) runs nothing; the limit (max 1) shows it was charged once: a new call is refused by it.
    await h.send(call(3, 'delete_file', { path: '/srv/a' }, retry));
    assert.match(h.text(3), /already used/);
    assert.equal(h.toServer.length, 1);

    const rows = h.callRows();
    assert.equal(rows.length, 2, JSON.stringify(rows));
    const allowed = rows.find((r) => r.decision === 'allow')!;
    assert.match(allowed.message!, /^approved by client:v2-client \([a-z2-9]{10}\)$/);
    assert.equal(allowed.outcome, 'result after 2 rounds');
    assert.equal(rows.find((r) => r.decision === 'deny')!.rule, '(request-state)');
    const steps = h.audit.query({ kind: 'approval' }).map((r) => r.decision).sort();
    assert.deepEqual(steps, ['approval_requested', 'approved']);
  });

  it('charges the approved call once: the limit (max 1) refuses the next approved one', async () => {
    const h = await harness(APPROVE);
    for (const [first, path] of [[10, '/a'], [20, '/b']] as const) {
      await h.send(call(first, 'delete_file', { path }));
      const state = h.answer(first)!.result!.requestState;
      await h.send(call(first + 1, 'delete_file', { path }, { inputResponses: { 'dev.toolgate/approval': { action: 'accept', content: { decision: 'approve' } } }, requestState: state }));
      if (first === 10) h.s.fromServer({ jsonrpc: '2.0', id: 11, result: { content: [] } });
    }
    assert.equal(h.toServer.length, 1);
    assert.match(h.text(21), /Limit reached: 1 call per minute \(\\"deletes\\"/);
  });

  it('a decline denies the call; nothing is forwarded', async () => {
    const h = await harness(APPROVE);
    await h.send(call(1, 'delete_file', { path: '/srv/a' }));
    await h.send(call(2, 'delete_file', { path: '/srv/a' }, { inputResponses: { 'dev.toolgate/approval': { action: 'decline' } }, requestState: h.answer(1)!.result!.requestState }));
    assert.match(h.text(2), /\[POLICY DENIED\] Denied by client:v2-client: decline in the client/);
    assert.match(h.text(2), /"status":"denied"/);
    assert.deepEqual(h.toServer, []);
  });

  it('the retry is decided again: a policy that now denies the tool refuses it, though the user approved', async () => {
    const h = await harness(APPROVE);
    await h.send(call(1, 'delete_file', { path: '/srv/a' }));
    h.engine.setPolicy(compiled({ version: '1', default: 'allow', tools: { delete_file: { action: 'deny', on_deny: 'No deleting today.' } } }));
    await h.send(call(2, 'delete_file', { path: '/srv/a' }, { inputResponses: { 'dev.toolgate/approval': { action: 'accept', content: { decision: 'approve' } } }, requestState: h.answer(1)!.result!.requestState }));
    assert.match(h.text(2), /No deleting today/);
    assert.deepEqual(h.toServer, []);
  });

  it('refuses a retry whose state was changed, or that calls with other arguments, and spends nothing', async () => {
    const h = await harness(APPROVE);
    await h.send(call(1, 'delete_file', { path: '/srv/a' }));
    const state = h.answer(1)!.result!.requestState as string;
    const approve = { 'dev.toolgate/approval': { action: 'accept', content: { decision: 'approve' } } };
    await h.send(call(2, 'delete_file', { path: '/' }, { inputResponses: approve, requestState: state }));
    assert.match(h.text(2), /issued for other arguments/);
    await h.send(call(3, 'delete_file', { path: '/srv/a' }, { inputResponses: approve, requestState: `${state.slice(0, 10)}x${state.slice(11)}` }));
    assert.match(h.text(3), /does not carry toolgate's signature|not one toolgate issued/);
    for (const n of [2, 3]) assert.equal(h.answer(n)!.error!.code, -32602, `a refused state is a protocol error, not the call's result (${h.text(n)})`);
    // Answers without any state answer nothing toolgate asked: a new call, held again, whose answers decided nothing.
    await h.send(call(4, 'delete_file', { path: '/srv/a' }, { inputResponses: approve }));
    const again = h.answer(4)!.result!;
    assert.equal(again.resultType, 'input_required', h.text(4));
    assert.notEqual(again.requestState, state);
    assert.deepEqual(h.toServer, []);
    assert.equal((await h.approvals.store.list({ status: 'pending' })).length, 1, 'no refused retry, nor the stateless answers, decided the approval');
    await h.send(call(5, 'delete_file', { path: '/srv/a' }, { inputResponses: approve, requestState: state }));
    assert.equal(h.toServer.length, 1, 'the genuine retry still goes through');
  });

  it('a legacy client is asked by an elicitation request, as before', async () => {
    const h = await harness(APPROVE, 'legacy');
    await h.send(call(1, 'delete_file', { path: '/srv/a' }));
    assert.equal(h.toClient[0].method, 'elicitation/create', JSON.stringify(h.toClient));
    assert.equal(h.answer(1), undefined, 'the call stays open');
  });
});

const LIMITED = { version: '1', default: 'allow', tools: {
  confirm_delete: { limits: [{ counter: 'deletes', window: 'minute', max: 1, scope: 'grant' }] },
} };
const ASK = { q: { method: 'elicitation/create', params: { mode: 'form', message: 'Really?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } } };

describe("an upstream's input_required (passed through, the retry continues the call)", () => {
  /** The first round: the call forwarded, the upstream asks for input. */
  async function firstRound(policy: unknown = LIMITED) {
    const h = await harness(policy);
    await h.send(call(1, 'confirm_delete', { path: '/srv/a' }));
    assert.equal(h.toServer.length, 1);
    h.s.fromServer({ jsonrpc: '2.0', id: 1, result: { resultType: 'input_required', inputRequests: ASK, requestState: 'their-state-1' } });
    for (let i = 0; i < 100 && !h.answer(1); i++) await new Promise((r) => setTimeout(r, 5));
    const asked = h.answer(1)!.result!;
    return { h, asked };
  }
  const answers = { q: { action: 'accept', content: { ok: true } } };

  it('passes the request on with toolgate\'s state; the retry is forwarded with the upstream\'s own, charged once, one audit row', async () => {
    const { h, asked } = await firstRound();
    assert.equal(asked.resultType, 'input_required');
    assert.deepEqual(asked.inputRequests, ASK, 'what the upstream asks reaches the client unchanged');
    assert.notEqual(asked.requestState, 'their-state-1', 'the client holds toolgate\'s state, not the upstream\'s');
    assert.equal(h.callRows()[0].outcome, 'input_required', 'the round is recorded; the row stays open for the next');

    // The limit is 1 a minute and the first round took it: the retry is the same call, not charged again.
    await h.send(call(2, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.equal(h.toServer.length, 2, h.text(2));
    assert.deepEqual(h.toServer[1], call(2, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: 'their-state-1' }));
    h.s.fromServer({ jsonrpc: '2.0', id: 2, result: { content: [{ type: 'text', text: 'deleted' }] } });
    assert.match(h.text(2), /deleted/);
    const rows = h.callRows();
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.equal(rows[0].decision, 'allow');
    assert.equal(rows[0].outcome, 'result after 2 rounds');

    // A new call (no state) is a new call: the limit it already spent refuses it.
    await h.send(call(3, 'confirm_delete', { path: '/srv/a' }));
    assert.match(h.text(3), /Limit reached/);
  });

  it('answers with no state are a new call: decided and charged as one, sent with the client\'s answers but never with an answer to toolgate\'s approval', async () => {
    const h = await harness(LIMITED);
    const own = { ...answers, 'dev.toolgate/approval': { action: 'accept', content: { decision: 'approve' } } };
    await h.send(call(1, 'confirm_delete', { path: '/srv/a' }, { inputResponses: own }));
    assert.equal(h.toServer.length, 1, h.text(1));
    assert.deepEqual(h.toServer[0], call(1, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers }));
    h.s.fromServer({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'deleted' }] } });
    assert.match(h.text(1), /deleted/);
    assert.deepEqual(h.callRows().map((r) => [r.decision, r.outcome]), [['allow', 'result']]);
    // It took the limit (1 a minute) as any new call does: the next, answers or not, is refused by it.
    await h.send(call(2, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers }));
    assert.match(h.text(2), /Limit reached/);
    assert.equal(h.toServer.length, 1);
  });

  it('a replayed or redirected retry never reaches the upstream', async () => {
    const { h, asked } = await firstRound();
    await h.send(call(2, 'confirm_delete', { path: '/srv/everything' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.match(h.text(2), /issued for other arguments/);
    await h.send(call(3, 'delete_all', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.match(h.text(3), /issued for another tool/);
    await h.send(call(4, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: 'their-state-1' }));
    assert.match(h.text(4), /not one toolgate issued/, 'the upstream\'s own state, presented directly, is refused');
    assert.equal(h.toServer.length, 1);
    await h.send(call(5, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.equal(h.toServer.length, 2, 'the genuine retry passes');
    await h.send(call(6, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.match(h.text(6), /already used/);
    assert.equal(h.toServer.length, 2);
  });

  it('answers that carry "__proto__" (or are no object) are refused like such arguments, before anything else', async () => {
    const { h, asked } = await firstRound();
    h.s.fromClientLine(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm_delete","arguments":{"path":"/srv/a"},"inputResponses":{"q":{"action":"accept","content":{"__proto__":{"admin":true}}}},"requestState":${JSON.stringify(asked.requestState)}}}`);
    await h.send(call(3, 'confirm_delete', { path: '/srv/a' }, { inputResponses: 'yes', requestState: asked.requestState }));
    assert.match(h.text(2), /-32602.*inputResponses have a member \\"__proto__\\"/);
    assert.match(h.text(3), /inputResponses must be an object/);
    assert.equal(h.toServer.length, 1);
    await h.send(call(4, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.equal(h.toServer.length, 2, 'the refused ones spent nothing');
  });

  it('the retry is still checked against the policy: the kill switch stops it', async () => {
    const { h, asked } = await firstRound();
    await h.state.flags.setKillSwitch('*', true);
    await h.send(call(2, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    assert.match(h.text(2), /kill switch is on/);
    assert.equal(h.toServer.length, 1);
  });

  it('several rounds: each answer that asks again gets a new state; the row tells the last outcome and the rounds', async () => {
    const { h, asked } = await firstRound();
    await h.send(call(2, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: asked.requestState }));
    h.s.fromServer({ jsonrpc: '2.0', id: 2, result: { resultType: 'input_required', inputRequests: ASK } });
    for (let i = 0; i < 100 && !h.answer(2); i++) await new Promise((r) => setTimeout(r, 5));
    const again = h.answer(2)!.result!;
    assert.equal(typeof again.requestState, 'string', 'toolgate gives a state even when the upstream gave none');
    assert.equal(h.callRows()[0].outcome, 'input_required after 2 rounds');
    await h.send(call(3, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers, requestState: again.requestState }));
    assert.deepEqual(h.toServer[2], call(3, 'confirm_delete', { path: '/srv/a' }, { inputResponses: answers }), 'no state goes up when the upstream gave none');
    h.s.fromServer({ jsonrpc: '2.0', id: 3, result: { isError: true, content: [] } });
    const rows = h.callRows();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].outcome, 'is_error after 3 rounds');
  });
});
