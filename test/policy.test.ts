import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { importInterceptPolicy } from '../src/policy/import-intercept.js';
import { loadPolicyFile, parsePolicyText, policyJsonSchema, validatePolicyObject, watchPolicyFile, type LoadResult } from '../src/policy/index.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { FIXTURES, ROOT } from './helpers/toolgate.js';

const SEEDS = join(FIXTURES, 'seeds');

describe('policy loading', () => {
  it('loads the PolicyLayer policy.json of every seed record unchanged', () => {
    const files = readdirSync(SEEDS);
    assert.equal(files.length, 3);
    for (const f of files) {
      const r = loadPolicyFile(join(SEEDS, f));
      assert.ok(r.ok, `${f}: ${JSON.stringify(!r.ok && r.issues)}`);
      assert.equal(r.policy.default, 'deny');
      const [name, entry] = Object.entries(r.policy.tools)[0];
      assert.equal(entry.limits[0].counter, `${name}_rate`);
      assert.equal(entry.limits[0].scope, 'grant');
    }
  });

  it('loads the SPEC example policy', () => {
    const spec = readFileSync(join(ROOT, 'docs/examples/spec-example.policy.json'), 'utf8');
    const r = parsePolicyText(spec);
    assert.ok(r.ok, JSON.stringify(!r.ok && r.issues));
  });

  it('YAML and JSON of the same policy are the same policy', () => {
    const yaml = parsePolicyText('version: "1"\ndefault: allow\ntools:\n  echo: {}\n');
    const json = parsePolicyText('{"version":"1","default":"allow","tools":{"echo":{}}}');
    assert.ok(yaml.ok && json.ok);
    assert.equal(yaml.hash, json.hash);
  });

  it('reports every error with its JSON pointer and line:column', () => {
    const text = [
      'version: "2"',
      'default: maybe',
      'tools:',
      '  a:',
      '    deny_iff: []',
      '    limits:',
      '      - { counter: c, window: weekly, max: -1 }',
      '  b:',
      '    require:',
      '      - conditions:',
      '          - { path: "args.x", op: regex, value: "(a)\\\\1" }',
      '          - { path: "env.HOME", op: eq, value: 1 }',
      '          - { path: "args.n", op: gt, value: "abc" }',
      '          - { path: "args.l", op: in, value: 3 }',
      '          - { path: "args.l", op: lt }',
    ].join('\n');
    const r = parsePolicyText(text);
    assert.equal(r.ok, false);
    const got = !r.ok ? r.issues.map((i) => `${i.line}:${i.column} ${i.pointer}`) : [];
    for (const want of [
      '1:10 /version', '2:10 /default', '5:5 /tools/a/deny_iff', '7:31 /tools/a/limits/0/window', '7:44 /tools/a/limits/0/max',
      '11:49 /tools/b/require/0/conditions/0/value', '12:21 /tools/b/require/0/conditions/1/path',
      '13:46 /tools/b/require/0/conditions/2/value', '14:46 /tools/b/require/0/conditions/3/value', '15:13 /tools/b/require/0/conditions/4',
    ]) assert.ok(got.includes(want), `missing ${want} in ${JSON.stringify(got)}`);
  });

  it('reports JSON syntax errors and duplicate keys with a position', () => {
    const broken = parsePolicyText('{"version": "1", "tools": {');
    assert.equal(broken.ok, false);
    const dup = parsePolicyText('{"version":"1","default":"allow","default":"deny"}');
    assert.equal(dup.ok, false);
    assert.match(!dup.ok ? dup.issues[0].message : '', /unique/i);
    assert.equal(!dup.ok && dup.issues[0].line, 1);
  });

  it('an omitted default is deny (fail closed)', () => {
    const r = validatePolicyObject({ version: '1' });
    assert.ok(r.ok && r.policy.default === 'deny' && r.policy.mode === 'enforce');
  });
});

describe('policy JSON Schema', () => {
  it('the committed schema file is the one the code produces', () => {
    const committed = JSON.parse(readFileSync(join(ROOT, 'schema/policy.schema.json'), 'utf8'));
    assert.deepEqual(committed, policyJsonSchema());
  });

  it('describes every top-level field and forbids unknown ones', () => {
    const schema = policyJsonSchema() as { properties: Record<string, unknown>; additionalProperties: boolean; required: string[] };
    for (const field of ['version', 'default', 'mode', 'hide', 'all_tools', 'pins', 'tools']) assert.ok(field in schema.properties, field);
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(schema.required, ['version']);
  });
});

describe('Intercept import', () => {
  const { policy, notes } = importInterceptPolicy(readFileSync(join(FIXTURES, 'intercept/stripe.yaml'), 'utf8'));

  it('converts rules, state counters, rate limits, hide, deny and wildcard rules', () => {
    assert.equal(policy.default, 'allow');
    assert.deepEqual(policy.hide, ['delete_product']);
    const charge = policy.tools!.create_charge as any;
    assert.deepEqual(charge.require.map((r: any) => r.conditions[0].path), ['args.amount', 'args.currency']);
    assert.deepEqual(charge.limits, [{ counter: 'create_charge_daily_spend', window: 'day', max: 1000000, scope: 'server', increment_from: 'args.amount', on_deny: 'Daily spending cap of $10,000.00 reached' }]);
    assert.equal((policy.tools!.create_refund as any).limits[0].max, 9, 'lt 10 is at most 9');
    assert.deepEqual((policy.tools!.create_issue as any).limits[0], { counter: 'create_issue_rate_hour', window: 'hour', max: 5, scope: 'server', on_deny: 'Hourly limit of 5 new issues reached' });
    assert.equal((policy.tools!.delete_customer as any).action, 'deny');
    assert.equal((policy.all_tools as any).limits[0].max, 60);
    assert.ok(validatePolicyObject(policy).ok);
  });

  it('says what it could not convert, with a pointer', () => {
    assert.ok(notes.some((n) => n.startsWith('/tools/*/rules/1/conditions/0') && n.includes('headers.x')), JSON.stringify(notes));
    assert.ok(notes.some((n) => n.includes('lt 10')));
  });

  it('the converted policy decides like the original', async () => {
    const r = validatePolicyObject(policy);
    assert.ok(r.ok);
    const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
    const call = (tool: string, args: Record<string, unknown>) => engine.decide({ tool, args, grant: { label: 'a', tags: [] }, session: { id: 's' }, server: { name: 'stripe' }, now: Date.now() });
    assert.equal((await call('create_charge', { amount: 60000, currency: 'usd' })).message, 'Single charge cannot exceed $500.00');
    assert.equal((await call('create_charge', { amount: 100, currency: 'gbp' })).message, 'Only USD and EUR charges are permitted');
    assert.equal((await call('create_charge', { amount: 100, currency: 'usd' })).verdict, 'allow');
    assert.equal((await call('delete_customer', {})).verdict, 'deny');
    assert.equal((await call('delete_product', {})).rule, '/hide/0');
  });
});

describe('policy watcher', () => {
  const policyText = (tool: string) => JSON.stringify({ version: '1', default: 'deny', tools: { [tool]: {} } });
  const tools = (r: LoadResult) => (r.ok ? Object.keys(r.policy.tools) : ['(invalid)']);

  it('sees edits in place, replacements by rename (and edits after them), and a file deleted then written again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-watch-'));
    const file = join(dir, 'policy.json');
    writeFileSync(file, policyText('a'));
    const loads: string[][] = [];
    let heard: () => void = () => {};
    const stop = watchPolicyFile(file, (r) => { loads.push(tools(r)); heard(); }, 20);
    const reloadAfter = async (change: () => void, tool: string) => {
      // The watch does not keep the process alive (toolgate's streams do): this bound does, while waiting.
      let bound: NodeJS.Timeout | undefined;
      const next = new Promise<void>((resolve, reject) => {
        heard = resolve;
        bound = setTimeout(() => reject(new Error(`no reload to ${tool}`)), 10_000);
      });
      change();
      await next.finally(() => clearTimeout(bound));
      assert.deepEqual(loads.at(-1), [tool]);
    };
    try {
      await reloadAfter(() => writeFileSync(file, policyText('b')), 'b');
      await reloadAfter(() => { writeFileSync(join(dir, 'policy.json.tmp'), policyText('c')); renameSync(join(dir, 'policy.json.tmp'), file); }, 'c');
      await reloadAfter(() => writeFileSync(file, policyText('d')), 'd');
      await reloadAfter(() => { renameSync(file, join(dir, 'policy.json~')); writeFileSync(file, policyText('e')); }, 'e');
      await reloadAfter(() => writeFileSync(file, policyText('f')), 'f');
      await reloadAfter(() => unlinkSync(file), '(invalid)');
      await reloadAfter(() => writeFileSync(file, policyText('g')), 'g');
      await reloadAfter(() => writeFileSync(file, policyText('h')), 'h');
    } finally {
      stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
