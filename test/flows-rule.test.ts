import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompiledPolicy, Engine, type CallContext } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import type { FlowTouch } from '../src/state/types.js';
import { classifyTools, recommendPolicy } from '../src/risk/index.js';

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
function engineFor(policy: unknown) {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
}
const ctx = (tool: string, now = T0): CallContext => ({ tool, args: {}, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'mail' }, now });
const touch = (role: string, tool: string, server: string, at: number): FlowTouch => ({ role, tool, server, at });
const TRIFECTA = { version: '1', default: 'allow', flows: [{ after: ['private', 'untrusted'], then: { egress: 'approve' } }] };
const BOTH = [touch('private', 'read_file', 'fs', T0 - 120_000), touch('untrusted', 'fetch', 'web', T0 - 60_000)];

describe('data-flow rules (SPEC 11) in the engine', () => {
  it('holds an egress call once every role in after was touched, naming the earlier calls and their times', async () => {
    const d = await engineFor(TRIFECTA).decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH } });
    assert.equal(d.verdict, 'approve');
    assert.equal(d.rule, '/flows/0/then/egress');
    assert.match(d.message!, /read_file on fs at 11:58:00Z \(private\); fetch on web at 11:59:00Z \(untrusted\)/);
    assert.match(d.message!, /"send_message" can send data out \(egress\)/);
    assert.ok(d.approval, 'held with approval settings');
  });

  it('lets the egress call run while a role in after is missing, or touched before the window', async () => {
    const e = engineFor(TRIFECTA);
    assert.equal((await e.decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH.slice(0, 1) } })).verdict, 'allow');
    assert.equal((await e.decide(ctx('send_message', T0 + 3_600_000 - 90_000), { flow: { roles: ['egress'], touched: BOTH } })).verdict, 'allow', 'the private read is older than 1h');
    assert.equal((await e.decide(ctx('send_message'), { flow: { roles: ['egress'], touched: [] } })).verdict, 'allow', 'a fresh agent');
    assert.equal((await e.decide(ctx('read_file'), { flow: { roles: ['private'], touched: BOTH } })).verdict, 'allow', 'not an egress tool');
  });

  it('an approved call passes an approve rule, never a deny rule; deny beats approve', async () => {
    const e = engineFor({ ...TRIFECTA, flows: [...TRIFECTA.flows, { after: ['untrusted'], then: { egress: 'deny' }, window: '10m', on_deny: 'No sending after reading the web.' }] });
    const d = await e.decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH } });
    assert.equal(d.verdict, 'deny');
    assert.equal(d.rule, '/flows/1/then/egress');
    assert.match(d.message!, /^No sending after reading the web\. This agent has touched content someone else wrote in the last 10 min: fetch on web/);
    assert.equal((await e.decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH }, approved: true })).verdict, 'deny');
    const held = engineFor(TRIFECTA);
    assert.equal((await held.decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH }, approved: true })).verdict, 'allow');
  });

  it('comes after the entry\'s own denials (step 7b), and is skipped in shadow mode only by being logged', async () => {
    const e = engineFor({ ...TRIFECTA, tools: { send_message: { action: 'deny', on_deny: 'never' } } });
    const d = await e.decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH } });
    assert.equal(d.rule, '/tools/send_message/action');
    const shadow = await engineFor({ ...TRIFECTA, mode: 'shadow' }).decide(ctx('send_message'), { flow: { roles: ['egress'], touched: BOTH } });
    assert.equal(shadow.verdict, 'approve');
    assert.equal(shadow.enforced, false);
  });

  it('validates rules and per-tool roles', () => {
    assert.equal(validatePolicyObject({ version: '1', tools: { t: { flow: ['private', 'egress'] } }, flows: [{ after: ['private'], then: { egress: 'deny' }, window: '30m' }] }).ok, true);
    for (const bad of [
      { version: '1', tools: { t: { flow: ['secret'] } } },
      { version: '1', flows: [{ after: [], then: { egress: 'deny' } }] },
      { version: '1', flows: [{ after: ['private'], then: { egress: 'block' } }] },
      { version: '1', flows: [{ after: ['private'], then: {} }] },
      { version: '1', flows: [{ after: ['private'], then: { egress: 'deny' }, window: 'an hour' }] },
    ]) assert.equal(validatePolicyObject(bad).ok, false, JSON.stringify(bad));
  });

  it('the recommended policy holds egress after private and untrusted (the lethal trifecta), approvable by the client under run', () => {
    const tools = [{ name: 'send_message', description: 'Send a message to a channel.' }];
    const p = recommendPolicy(classifyTools(tools), tools) as { flows: unknown[] };
    assert.deepEqual(p.flows, [{ after: ['private', 'untrusted'], then: { egress: 'approve' }, window: '1h' }]);
    assert.equal(validatePolicyObject(p).ok, true);
    const run = recommendPolicy(classifyTools(tools), tools, 'x', { clientApproves: true }) as { flows: { approval?: { via: string[] } }[] };
    assert.ok(run.flows[0].approval!.via.includes('client'));
    assert.equal(validatePolicyObject(run).ok, true);
  });
});
