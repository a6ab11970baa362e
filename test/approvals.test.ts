import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { ApprovalError, Approvals, bindingOf, formatDuration, newApprovalId, normaliseApprovalId, type HeldCall } from '../src/approvals/index.js';
import { signature, webhookBody } from '../src/approvals/webhook.js';
import { cliHowTo } from '../src/approvals/text.js';
import { AuditLog } from '../src/audit/index.js';
import { MemoryApprovalStore } from '../src/state/memory-approvals.js';
import { tempDir } from './helpers/toolgate.js';

const log = pino({ level: 'silent' });
const call = (extra: Partial<HeldCall> = {}): HeldCall => ({
  server: 'files', grant: 'ci', session: 's1', client: 'agent', tool: 'delete_file', args: { path: '/a', password: 'hunter2' },
  rule: '/tools/delete_file/action', reason: '"delete_file" needs human approval.',
  settings: { timeoutMs: 300_000, via: ['cli', 'api'], mode: 'hold', validForMs: 600_000 }, ...extra,
});

describe('approvals', () => {
  it('ids are short, typeable and unguessable; typed back in any case they are found', () => {
    const ids = new Set(Array.from({ length: 1000 }, newApprovalId));
    assert.equal(ids.size, 1000);
    for (const id of ids) assert.match(id, /^[2-9a-hjkmnp-z]{10}$/);
    const [id] = ids;
    assert.equal(normaliseApprovalId(` ${id.toUpperCase()} `), id);
    assert.equal(normaliseApprovalId('abc'), null);
    assert.equal(normaliseApprovalId('0o1l0o1l0o'), null);
  });

  it('the binding covers grant, server, tool and the exact arguments, not their key order', () => {
    const base = { grant: 'g', server: 's', tool: 't', args: { a: 1, b: [1, 2] } };
    assert.equal(bindingOf(base), bindingOf({ ...base, args: { b: [1, 2], a: 1 } }));
    for (const other of [{ grant: 'h' }, { server: 'x' }, { tool: 'u' }, { args: { a: 1, b: [2, 1] } }, { args: { a: '1', b: [1, 2] } }]) {
      assert.notEqual(bindingOf(base), bindingOf({ ...base, ...other }));
    }
  });

  it('the same call made again finds the live approval instead of opening another; secrets are masked', async () => {
    const store = new MemoryApprovalStore();
    const approvals = new Approvals({ store, log });
    const first = await approvals.open(call());
    const again = await approvals.open(call());
    const other = await approvals.open(call({ args: { path: '/b' } }));
    assert.equal(first.fresh, true);
    assert.equal(again.fresh, false);
    assert.equal(again.approval.id, first.approval.id);
    assert.notEqual(other.approval.id, first.approval.id);
    assert.deepEqual(first.approval.args, { path: '/a', password: '***' });
    approvals.close();
  });

  it('a channel the policy does not allow may not decide; unknown ids and second decisions are refused', async () => {
    const approvals = new Approvals({ store: new MemoryApprovalStore(), log });
    const { approval } = await approvals.open(call());
    await assert.rejects(approvals.decide(approval.id, true, 'client:x', 'client'), (e: ApprovalError) => e.status === 403 && /allows cli, api/.test(e.message));
    await assert.rejects(approvals.decide('2222222222', true, 'cli:a', 'cli'), (e: ApprovalError) => e.status === 404);
    await approvals.decide(approval.id.toUpperCase(), false, 'cli:a', 'cli', 'no');
    await assert.rejects(approvals.decide(approval.id, true, 'cli:b', 'cli'), (e: ApprovalError) => e.status === 409 && /already denied by cli:a/.test(e.message));
    approvals.close();
  });

  it('waiters hear the decision; an approval is used once; a wait can be abandoned without ending the approval', async () => {
    const approvals = new Approvals({ store: new MemoryApprovalStore(), log });
    const { approval } = await approvals.open(call());
    const gaveUp = new AbortController();
    const abandoned = approvals.wait(approval, gaveUp.signal);
    gaveUp.abort();
    assert.equal(await abandoned, null);
    assert.equal((await approvals.store.get(approval.id))?.status, 'pending');
    const waiting = [approvals.wait(approval), approvals.wait(approval)];
    await approvals.decide(approval.id, true, 'api:ops', 'api');
    const heard = await Promise.all(waiting);
    assert.deepEqual(heard.map((a) => a?.status), ['approved', 'approved']);
    assert.deepEqual(await Promise.all([approvals.use(approval.id), approvals.use(approval.id)]), [true, false]);
    approvals.close();
  });

  it('every step is audited: requested, approved, rejected, timeout, unused', async () => {
    const dir = tempDir();
    const audit = new AuditLog(join(dir, 'audit.db'));
    let now = 1_800_000_000_000;
    const approvals = new Approvals({ store: new MemoryApprovalStore(), log, audit, now: () => now });
    const a = (await approvals.open(call({ args: { n: 1 } }))).approval;
    const b = (await approvals.open(call({ args: { n: 2 } }))).approval;
    const c = (await approvals.open(call({ args: { n: 3 }, settings: { ...call().settings, timeoutMs: 1 } }))).approval;
    await approvals.decide(a.id, true, 'cli:a', 'cli');
    await approvals.decide(b.id, false, 'cli:a', 'cli', 'nope');
    assert.equal((await approvals.wait(c))?.status, 'timeout');
    now += 600_001;
    await approvals.sweep();
    audit.close();
    const rows = new AuditLog(join(dir, 'audit.db')).query({ kind: 'approval', limit: 100 });
    const steps = rows.map((r) => `${r.decision}:${r.message?.slice(0, 10)}`).sort();
    assert.deepEqual(steps, [`approval_requested:${a.id}`, `approval_requested:${b.id}`, `approval_requested:${c.id}`, `approved:${a.id}`, `rejected:${b.id}`, `timeout:${c.id}`, `unused:${a.id}`].sort());
    approvals.close();
  });

  it('webhooks: the signature is an HMAC over timestamp and body; slack format reads as a message with masked arguments', async () => {
    const approvals = new Approvals({ store: new MemoryApprovalStore(), log });
    const { approval } = await approvals.open(call());
    const slack = JSON.parse(webhookBody(approval, 'slack', cliHowTo('-c toolgate.yaml')));
    assert.match(slack.text, /\*delete_file\* on \*files\* \(grant ci\)/);
    assert.match(slack.text, /"password": "\*\*\*"/);
    assert.match(slack.text, new RegExp(`toolgate approvals approve ${approval.id} -c toolgate.yaml`));
    assert.ok(!slack.text.includes('hunter2'));
    assert.equal(signature('k', '1', 'b'), signature('k', '1', 'b'));
    assert.notEqual(signature('k', '1', 'b'), signature('k', '2', 'b'));
    assert.match(signature('k', '1', 'b'), /^v1=[0-9a-f]{64}$/);
    approvals.close();
  });

  it('durations read as people write them', () => {
    assert.equal(formatDuration(300_000), '5m');
    assert.equal(formatDuration(2_000), '2s');
    assert.equal(formatDuration(290_000), '4m50s');
    assert.equal(formatDuration(5_400_000), '1h30m');
  });
});
