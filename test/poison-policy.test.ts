import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CompiledPolicy, Engine, type CallContext } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { classifyTools, recommendPolicy } from '../src/risk/index.js';
import { MemoryCounterStore } from '../src/state/memory.js';

function engineFor(policy: unknown): Engine {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
}
const ctx = (tool: string): CallContext => ({ tool, args: {}, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'srv' }, now: Date.now() });

test('poisoned: hide | warn | allow validates at the top and per tool; anything else is an error at its pointer', () => {
  assert.ok(validatePolicyObject({ version: '1', poisoned: 'hide', tools: { a: { poisoned: 'allow' } } }).ok);
  const bad = validatePolicyObject({ version: '1', tools: { a: { poisoned: 'block' } } });
  assert.equal(bad.ok, false);
  assert.equal(!bad.ok && bad.issues[0].pointer, '/tools/a/poisoned');
});

test('poisonedFor: the tool entry (also by glob) over the policy, warn when neither says', () => {
  assert.equal(engineFor({ version: '1', tools: { a: {} } }).current.poisonedFor('a'), 'warn');
  const e = engineFor({ version: '1', poisoned: 'hide', tools: { a: { poisoned: 'allow' }, 'b_*': { poisoned: 'warn' }, c: {} } });
  assert.equal(e.current.poisonedFor('a'), 'allow');
  assert.equal(e.current.poisonedFor('b_x'), 'warn');
  assert.equal(e.current.poisonedFor('c'), 'hide');
  assert.equal(e.current.poisonedFor('unlisted'), 'hide');
});

test('the engine denies a call to a hide-level poisoned tool under poisoned: hide, naming the evidence; not under warn or allow', async () => {
  const hint = { poisoned: { tool: 'add', findings: 'tag_characters in description: 12 tag characters (U+E0000–E007F) spelling "ignore"' } };
  const hiding = await engineFor({ version: '1', default: 'allow', poisoned: 'hide' }).decide(ctx('add'), hint);
  assert.equal(hiding.verdict, 'deny');
  assert.equal(hiding.rule, '(poisoned)');
  assert.match(hiding.message!, /"add" is hidden: its definition carries text aimed at the model rather than the user \(tag_characters in description: 12 tag characters/);
  assert.equal((await engineFor({ version: '1', default: 'allow', poisoned: 'warn' }).decide(ctx('add'), hint)).verdict, 'allow');
  assert.equal((await engineFor({ version: '1', default: 'allow', poisoned: 'hide', tools: { add: { poisoned: 'allow' } } }).decide(ctx('add'), hint)).verdict, 'allow');
  assert.equal((await engineFor({ version: '1', default: 'allow', poisoned: 'hide' }).decide(ctx('add'))).verdict, 'allow', 'no findings, no denial');
  // Called by another spelling: the poisoned tool's own setting counts too.
  const lookAlike = await engineFor({ version: '1', default: 'allow', poisoned: 'allow', tools: { add: { poisoned: 'hide' } } }).decide(ctx('ADD'), hint);
  assert.equal(lookAlike.verdict, 'deny');
});

test('the recommended policy hides poisoned tools', () => {
  const tools = [{ name: 'read_note', description: 'Read a note' }];
  assert.equal(recommendPolicy(classifyTools(tools, {}), tools, 'x').poisoned, 'hide');
});
