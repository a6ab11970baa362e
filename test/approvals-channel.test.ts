import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { approvalChannel, Approvals, type HeldCall } from '../src/approvals/index.js';
import { ApprovalApiError, handleApprovalsApi, webhookDecisionSignature, type AuthenticatedAs } from '../src/gateway/approvals-api.js';
import { MemoryApprovalStore } from '../src/state/memory-approvals.js';

const SECRET = 'webhook-secret-0123456789abcdef';
const call: HeldCall = {
  server: 'files', grant: 'ci', grantId: 'gr_ci', session: 's1', tool: 'delete_file', args: { path: '/a' }, rule: '/tools/delete_file/action', reason: 'held',
  settings: { timeoutMs: 300_000, via: ['api', 'dashboard', 'webhook'], mode: 'hold', validForMs: 600_000, maxPending: 20 },
};

function fakeRes(): ServerResponse & { status?: number; body?: string } {
  const res = { writeHead(status: number) { res.status = status; return res; }, end(body?: string) { res.body = body; return res; } } as unknown as ServerResponse & { status?: number; body?: string };
  return res;
}

async function decide(body: Record<string, unknown>, as: AuthenticatedAs, headers: Record<string, string> = {}) {
  const approvals = new Approvals({ store: new MemoryApprovalStore(), log: pino({ level: 'silent' }), webhook: () => ({ url: 'http://127.0.0.1:9/hook', secret: SECRET, format: 'json' }) });
  const { approval } = await approvals.open(call);
  const req = { method: 'POST', headers } as unknown as IncomingMessage;
  const path = `/api/approvals/${approval.id}/approve`;
  try {
    const res = fakeRes();
    await handleApprovalsApi(req, res, path, new URL(path, 'http://gateway'), body, approvals, as);
    const decided = await approvals.store.get(approval.id);
    return { id: approval.id, channel: approvalChannel(decided!), status: decided!.status };
  } finally {
    approvals.close();
  }
}

describe('admin API: the channel recorded is the one that authenticated', () => {
  it('the admin token decides as api, by default and when it says so', async () => {
    assert.equal((await decide({}, 'api')).channel, 'api');
    assert.equal((await decide({ via: 'api', by: 'ops' }, 'api')).channel, 'api');
  });

  it('the admin token cannot claim dashboard, nor webhook without the webhook\'s signature', async () => {
    for (const via of ['dashboard', 'webhook']) {
      await assert.rejects(decide({ via }, 'api'), (err: unknown) => err instanceof ApprovalApiError && err.status === 403 && /cannot be claimed|needs x-toolgate-signature/.test(err.message), via);
    }
    const ts = String(Math.floor(Date.now() / 1000));
    await assert.rejects(decide({ via: 'webhook' }, 'api', { 'x-toolgate-timestamp': ts, 'x-toolgate-signature': webhookDecisionSignature('another-secret-0123456789', ts, 'approve', 'x') }), /needs x-toolgate-signature/);
    const stale = String(Math.floor(Date.now() / 1000) - 3600);
    await assert.rejects(decide({ via: 'webhook' }, 'api', { 'x-toolgate-timestamp': stale, 'x-toolgate-signature': 'v1=00' }), /needs x-toolgate-signature/);
  });

  it('the dashboard\'s session decides as dashboard and cannot claim api or webhook', async () => {
    assert.equal((await decide({ via: 'dashboard' }, 'dashboard')).channel, 'dashboard');
    assert.equal((await decide({}, 'dashboard')).channel, 'dashboard');
    for (const via of ['api', 'webhook']) await assert.rejects(decide({ via }, 'dashboard'), /cannot be claimed/, via);
  });

  it('a webhook receiver that signs the decision with the webhook secret decides as webhook', async () => {
    const approvals = new Approvals({ store: new MemoryApprovalStore(), log: pino({ level: 'silent' }), webhook: () => ({ url: 'http://127.0.0.1:9/hook', secret: SECRET, format: 'json' }) });
    const { approval } = await approvals.open(call);
    const ts = String(Math.floor(Date.now() / 1000));
    const req = { method: 'POST', headers: { 'x-toolgate-timestamp': ts, 'x-toolgate-signature': webhookDecisionSignature(SECRET, ts, 'approve', approval.id) } } as unknown as IncomingMessage;
    const path = `/api/approvals/${approval.id}/approve`;
    await handleApprovalsApi(req, fakeRes(), path, new URL(path, 'http://gateway'), { via: 'webhook', by: 'slackbot' }, approvals, 'api');
    assert.equal((await approvals.store.get(approval.id))!.decidedBy, 'webhook:slackbot');
    approvals.close();
  });
});
