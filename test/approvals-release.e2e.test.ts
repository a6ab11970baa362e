import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { RECORDING, recorded, until } from './helpers/approvals.js';
import { denialText, tempDir } from './helpers/toolgate.js';

const ADMIN = 'admin-token-for-release-tests-0123';

const policyWith = (via: { run_command?: string[]; write_note?: string[] } = {}) => ({
  version: '1', default: 'deny',
  tools: {
    read_note: { limits: [{ counter: 'reads', window: 'hour', max: 1, scope: 'grant' }] },
    run_command: { action: 'approve', ...(via.run_command ? { approval: { via: via.run_command } } : {}) },
    write_note: { action: 'approve', approval: { mode: 'retry', ...(via.write_note ? { via: via.write_note } : {}) } },
    delete_file: { action: 'approve' },
  },
});

/**
 * At release an approval is checked again (SPEC section 4): the grant must still be valid and the
 * channel that approved still allowed by the current policy. Per-grant limits and approvals are
 * keyed by the grant's id, never its label.
 */
describe('approvals: checked again at release; keyed by grant id', () => {
  let dir: string;
  let record: string;
  let policyFile: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let grants: Grants;
  const clients: Client[] = [];

  before(async () => {
    dir = tempDir();
    record = join(dir, 'calls.jsonl');
    policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify(policyWith()));
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', admin: { token: ADMIN },
      servers: { rec: { command: process.execPath, args: [RECORDING], env: { RECORD_FILE: record }, policy: policyFile } },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    grants = new Grants(state.grants);
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await gateway.stop();
    audit.close();
    await state.close();
  });

  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'release-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/rec`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  async function api(path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  const pendingFor = (tool: string, args: unknown) =>
    until(async () => (await api('/api/approvals?status=pending')).json.find((a: any) => a.tool === tool && JSON.stringify(a.args) === JSON.stringify(args)), `a pending ${tool}`);

  /** Writes a new policy and waits until the gateway has loaded it. */
  async function setPolicy(policy: unknown): Promise<void> {
    const reloads = audit.query({ kind: 'policy_reload', limit: 1000 }).length;
    writeFileSync(policyFile, JSON.stringify(policy));
    await until(() => audit.query({ kind: 'policy_reload', limit: 1000 }).length > reloads, 'the policy reload');
  }

  const ran = (tool: string, key: string, value: string) => recorded(record).filter((c) => c.tool === tool && c.args[key] === value).length;

  it('a held call approved through a channel the policy no longer allows is denied, not forwarded', async () => {
    const client = await connect((await grants.create({ server: 'rec', label: 'ops' })).token);
    const held = client.callTool({ name: 'run_command', arguments: { command: 'deploy --prod' } });
    const pending = await pendingFor('run_command', { command: 'deploy --prod' });
    await setPolicy(policyWith({ run_command: ['cli'] }));
    // The approval was opened under the old policy, so the API may still decide it…
    assert.equal((await api(`/api/approvals/${pending.id}/approve`, {})).json.status, 'approved');
    // …but the call is released under the current one.
    assert.match(denialText(await held) ?? '', new RegExp(`Approval ${pending.id} was given through api, which the current policy no longer allows for this call \\(approval\\.via: cli\\)`));
    assert.equal(ran('run_command', 'command', 'deploy --prod'), 0, 'nothing reached the server');
    const row = audit.query({ kind: 'call', tool: 'run_command', limit: 10 }).find((r) => r.decision === 'deny');
    assert.equal(row?.rule, '/tools/run_command/approval/via');
    await setPolicy(policyWith());
  });

  it('retry mode: the call made again after approval is checked the same way, and then asks for a new approval', async () => {
    const client = await connect((await grants.create({ server: 'rec', label: 'ops' })).token);
    const args = { name: 'n', text: 'via-check' };
    const first = await client.callTool({ name: 'write_note', arguments: args });
    const id = (first._meta as any)['dev.toolgate/decision'].approval.id;
    assert.equal((await api(`/api/approvals/${id}/approve`, {})).json.status, 'approved');
    await setPolicy(policyWith({ write_note: ['cli'] }));
    assert.match(denialText(await client.callTool({ name: 'write_note', arguments: args })) ?? '', /was given through api, which the current policy no longer allows/);
    assert.equal(ran('write_note', 'text', 'via-check'), 0);
    const again = await client.callTool({ name: 'write_note', arguments: args });
    const next = (again._meta as any)['dev.toolgate/decision'].approval;
    assert.notEqual(next.id, id, 'the refused approval is spent: a new one is asked for');
    assert.equal(next.status, 'pending');
    await setPolicy(policyWith());
  });

  it('a grant revoked while its call is held: the approved call does not run', async () => {
    const { grant, token } = await grants.create({ server: 'rec', label: 'temp' });
    const client = await connect(token);
    const held = client.callTool({ name: 'delete_file', arguments: { path: '/srv/revoked' } });
    const pending = await pendingFor('delete_file', { path: '/srv/revoked' });
    await grants.revokeId(grant.id);
    assert.equal((await api(`/api/approvals/${pending.id}/approve`, {})).json.status, 'approved');
    assert.match(denialText(await held) ?? '', new RegExp(`Approval ${pending.id} cannot be used: the grant was revoked while the call waited`));
    assert.equal(ran('delete_file', 'path', '/srv/revoked'), 0, 'nothing reached the server');
  });

  it('two grants with the same label share neither per-grant limits nor approvals; audit rows keep the label', async () => {
    const real = await connect((await grants.create({ server: 'rec', label: 'ci' })).token);
    // An OAuth client (or an identity provider's subject) naming itself like an existing grant.
    const lookalike = await connect((await grants.create({ server: 'rec', label: 'ci' })).token);
    assert.equal(denialText(await real.callTool({ name: 'read_note', arguments: { name: 'a' } })), undefined);
    assert.match(denialText(await real.callTool({ name: 'read_note', arguments: { name: 'a' } })) ?? '', /Limit reached: 1 call per hour/);
    assert.equal(denialText(await lookalike.callTool({ name: 'read_note', arguments: { name: 'a' } })), undefined, 'its own limit, not the other grant\'s');

    const args = { name: 'shared', text: 'approved for the real ci only' };
    const asked = await real.callTool({ name: 'write_note', arguments: args });
    const id = (asked._meta as any)['dev.toolgate/decision'].approval.id;
    await api(`/api/approvals/${id}/approve`, {});
    const other = await lookalike.callTool({ name: 'write_note', arguments: args });
    assert.notEqual(denialText(other), undefined, 'the look-alike does not get the approval');
    assert.notEqual((other._meta as any)['dev.toolgate/decision'].approval.id, id);
    assert.equal(ran('write_note', 'name', 'shared'), 0);
    assert.equal(denialText(await real.callTool({ name: 'write_note', arguments: args })), undefined, 'the grant it was given to uses it');
    assert.equal(ran('write_note', 'name', 'shared'), 1);
    const rows = audit.query({ kind: 'call', tool: 'read_note', limit: 10 });
    assert.ok(rows.length >= 3 && rows.every((r) => r.grant_label === 'ci'));
  });
});
