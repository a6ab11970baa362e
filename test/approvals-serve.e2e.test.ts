import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { auditRows, cli as cliIn, RECORDING, recorded, until } from './helpers/approvals.js';
import { BIN, denialText, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'admin-token-for-approval-tests-0123';
const SECRET = 'webhook-secret-0123456789abcdef';

interface Serve { base: string; child: ChildProcess; stop(): Promise<void> }

/** `toolgate serve -c FILE` as its own process; resolves once it listens. */
async function startServe(home: string, config: string): Promise<Serve> {
  const child = spawn(process.execPath, [BIN, 'serve', '-c', config], { env: testEnv(home, { TOOLGATE_LOG_LEVEL: 'info', ADMIN_TOKEN: ADMIN, HOOK_SECRET: SECRET }) });
  let err = '';
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /"listen":"(http:\/\/[^"]+)"/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return { base, child, stop: async () => { child.kill('SIGTERM'); await exited; } };
}

async function connect(base: string, elicit?: (message: string) => { action: 'accept' | 'decline'; content?: Record<string, string> }): Promise<Client> {
  const client = new Client({ name: 'serve-test', version: '1' }, elicit ? { capabilities: { elicitation: {} } } : {});
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => elicit(req.params.message));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/rec`)));
  return client;
}

async function api(base: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** The pending approval of this tool with these (masked) arguments, once the gateway lists it. */
function pendingFor(base: string, tool: string, args: unknown): Promise<any> {
  return until(async () => (await api(base, '/api/approvals?status=pending')).json.find((a: any) => a.tool === tool && JSON.stringify(a.args) === JSON.stringify(args)), `a pending ${tool}`);
}

/** The CLI as an operator runs it beside the gateway: the configuration's ${VAR}s are set. */
const cli = (home: string, args: string[]) => cliIn(home, args, { ADMIN_TOKEN: ADMIN, HOOK_SECRET: SECRET });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('toolgate serve: human approval', () => {
  let home: string;
  let config: string;
  let record: string;
  let serve: Serve;
  let hook: Server;
  const deliveries: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];

  before(async () => {
    home = tempDir();
    record = join(home, 'calls.jsonl');
    // The receiver fails each delivery's first attempt, to see the retry.
    const seen = new Set<string>();
    hook = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        deliveries.push({ headers: req.headers, body });
        const id = String(req.headers['x-toolgate-delivery']);
        res.writeHead(seen.has(id) ? 200 : 500).end();
        seen.add(id);
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
    const policy = writePolicy(home, {
      version: '1', default: 'deny',
      tools: {
        read_note: {},
        delete_file: { action: 'approve', approval: { timeout: '5m', valid_for: '10m' } },
        write_note: { action: 'approve', approval: { mode: 'retry' }, limits: [{ counter: 'writes', window: 'hour', max: 1, scope: 'server' }] },
        run_command: { action: 'approve', approval: { via: ['client'] } },
      },
    });
    config = join(home, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db', admin: { token: '${ADMIN_TOKEN}' },
      servers: {
        rec: {
          command: process.execPath, args: [RECORDING], env: { RECORD_FILE: record }, auth: 'none', policy,
          approvals: { webhook: { url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`, secret: '${HOOK_SECRET}', format: 'json' } },
        },
      },
    }));
    serve = await startServe(home, config);
  });

  after(async () => {
    await serve.stop();
    hook.close();
  });

  it('a held call outlasts the 2 s stream switch, is listed with progress and masked arguments, and is forwarded once approved from the CLI', async () => {
    const client = await connect(serve.base);
    const progress: string[] = [];
    const held = client.callTool({ name: 'delete_file', arguments: { path: '/srv/a', api_token: 'hunter2' } }, undefined, { onprogress: (p) => progress.push(p.message ?? '') });
    const pending = await pendingFor(serve.base, 'delete_file', { path: '/srv/a', api_token: '***' });
    assert.equal(pending.status, 'pending');
    assert.equal(pending.client, 'serve-test');
    await until(() => progress[0], 'progress over Streamable HTTP');
    assert.match(progress[0], new RegExp(`Waiting for approval ${pending.id} .*toolgate approvals approve ${pending.id} -c `));
    await sleep(2500); // past the gateway's 2 s switch from a JSON answer to an SSE stream
    assert.deepEqual(recorded(record), [], 'nothing reached the server');
    const approved = await cli(home, ['approvals', 'approve', pending.id, '-c', config]);
    assert.equal(approved.code, 0, approved.stderr);
    assert.equal(denialText(await held), undefined);
    assert.deepEqual(recorded(record), [{ tool: 'delete_file', args: { path: '/srv/a', api_token: 'hunter2' } }]);
    const view = (await api(serve.base, `/api/approvals/${pending.id}`)).json;
    assert.equal(view.status, 'used');
    assert.match(view.decidedBy, /^cli:/);
    await client.close();
  });

  it('webhook: signed over timestamp and body, retried after a failure', async () => {
    const first = await until(() => deliveries.length >= 2 ? deliveries : undefined, 'the webhook and its retry');
    const [a, b] = first;
    assert.equal(a.headers['x-toolgate-delivery'], b.headers['x-toolgate-delivery'], 'a retry is the same delivery');
    for (const d of [a, b]) {
      const ts = String(d.headers['x-toolgate-timestamp']);
      const expected = `v1=${createHmac('sha256', SECRET).update(`${ts}.${d.body}`).digest('hex')}`;
      assert.equal(d.headers['x-toolgate-signature'], expected);
    }
    const body = JSON.parse(a.body);
    assert.equal(body.event, 'approval.requested');
    assert.equal(body.approval.tool, 'delete_file');
    assert.deepEqual(body.approval.args, { path: '/srv/a', api_token: '***' });
    assert.ok(!a.body.includes('hunter2'));
  });

  it('denied through the admin API with a reason; the SSE stream announces the pending call', async () => {
    const events = new AbortController();
    const stream = await fetch(`${serve.base}/api/approvals/stream`, { headers: { authorization: `Bearer ${ADMIN}` }, signal: events.signal });
    const reader = stream.body!.getReader();
    let text = '';
    const client = await connect(serve.base);
    const held = client.callTool({ name: 'delete_file', arguments: { path: '/srv/b' } });
    const pending = await pendingFor(serve.base, 'delete_file', { path: '/srv/b' });
    await until(async () => { text += new TextDecoder().decode((await reader.read()).value); return text.includes(`"id":"${pending.id}"`); }, 'the SSE event');
    assert.match(text, new RegExp(`event: pending\\ndata: \\{"id":"${pending.id}"`));
    events.abort();
    const denied = await api(serve.base, `/api/approvals/${pending.id}/deny`, { reason: 'wrong server' });
    assert.equal((await fetch(`${serve.base}/api/approvals/${pending.id}/approve`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } })).status, 409, 'no body is fine; decided once');
    assert.equal(denied.status, 200);
    assert.equal(denied.json.status, 'denied');
    assert.equal(denialText(await held), '[POLICY DENIED] Denied by api:admin: wrong server');
    assert.equal((await api(serve.base, `/api/approvals/${pending.id}/approve`, {})).status, 409, 'decided once');
    assert.equal((await api(serve.base, '/api/approvals/nope/approve', {})).status, 404);
    await client.close();
  });

  it('a client that gave up: the approval stays pending; once approved the same call passes once, a third time waits again', async () => {
    const client = await connect(serve.base);
    const args = { path: '/srv/c' };
    await assert.rejects(client.callTool({ name: 'delete_file', arguments: args }, undefined, { timeout: 300 }), /timed out/i);
    const pending = await pendingFor(serve.base, 'delete_file', args);
    assert.equal((await api(serve.base, `/api/approvals/${pending.id}/approve`, {})).json.status, 'approved');
    assert.ok(!recorded(record).some((c) => c.args.path === '/srv/c'), 'toolgate forwards nothing on its own');
    assert.equal(denialText(await client.callTool({ name: 'delete_file', arguments: args })), undefined);
    assert.equal(recorded(record).filter((c) => c.args.path === '/srv/c').length, 1);
    await assert.rejects(client.callTool({ name: 'delete_file', arguments: args }, undefined, { timeout: 300 }), /timed out/i);
    const again = await pendingFor(serve.base, 'delete_file', args);
    assert.notEqual(again.id, pending.id);
    assert.equal(recorded(record).filter((c) => c.args.path === '/srv/c').length, 1);
    await api(serve.base, `/api/approvals/${again.id}/deny`, {});
    await client.close();
  });

  it('mode retry: denied at once with the id; after approval the same call passes once; limits still apply to an approved call', async () => {
    const client = await connect(serve.base);
    const args = { name: 'n', text: 'one' };
    const first = await client.callTool({ name: 'write_note', arguments: args });
    const meta = (first._meta as any)['dev.toolgate/decision'];
    assert.equal(meta.approval.status, 'pending');
    assert.match(denialText(first)!, new RegExp(`Approval ${meta.approval.id} is pending .*toolgate approvals approve ${meta.approval.id}.*make the same call again`));
    assert.equal(denialText(await client.callTool({ name: 'write_note', arguments: { name: 'n', text: 'two' } })) !== undefined, true, 'other arguments are another approval');
    // The admin token cannot record its decision as the dashboard's or the webhook's; the webhook's receiver signs with the webhook secret.
    const approvePath = `/api/approvals/${meta.approval.id}/approve`;
    assert.equal((await api(serve.base, approvePath, { via: 'dashboard', by: 'ops' })).status, 403);
    assert.equal((await api(serve.base, approvePath, { via: 'webhook', by: 'ops' })).status, 403);
    const ts = String(Math.floor(Date.now() / 1000));
    const signed = { 'x-toolgate-timestamp': ts, 'x-toolgate-signature': `v1=${createHmac('sha256', SECRET).update(`${ts}.approve.${meta.approval.id}`).digest('hex')}` };
    assert.equal((await api(serve.base, approvePath, { via: 'webhook', by: 'ops' }, signed)).json.decidedBy, 'webhook:ops');
    assert.equal(denialText(await client.callTool({ name: 'write_note', arguments: args })), undefined);
    const third = await client.callTool({ name: 'write_note', arguments: args });
    assert.notEqual((third._meta as any)['dev.toolgate/decision'].approval.id, meta.approval.id, 'single use: a new approval');
    // The limit (1 per hour for the server) is spent: an approved call is still denied by it.
    await api(serve.base, `/api/approvals/${(third._meta as any)['dev.toolgate/decision'].approval.id}/approve`, {});
    assert.match(denialText(await client.callTool({ name: 'write_note', arguments: args }))!, /Limit reached: 1 call per hour/);
    assert.equal(recorded(record).filter((c) => c.tool === 'write_note').length, 1);
    await client.close();
  });

  it('via client: the CLI may not decide it; the client\'s user approves through elicitation', async () => {
    const asked: string[] = [];
    let cliAnswer: Promise<{ code: number; stderr: string }> | undefined;
    const client = await connect(serve.base, (message) => {
      asked.push(message);
      const id = /approval ([2-9a-z]{10})/.exec(message)![1];
      cliAnswer = cli(home, ['approvals', 'approve', id, '-c', config]);
      return { action: 'accept', content: { decision: 'approve' } };
    });
    assert.equal(denialText(await client.callTool({ name: 'run_command', arguments: { command: 'ls' } })), undefined);
    assert.match(asked[0], /"run_command"/);
    const refused = await cliAnswer!;
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /cannot be decided through cli: the policy allows client/);
    assert.equal(recorded(record).filter((c) => c.tool === 'run_command').length, 1);
    await client.close();
  });

  it('audit rows for every step, filterable by decision; metrics for approvals', async () => {
    const q = ['--audit', join(home, 'audit.db')];
    assert.ok((await auditRows(home, 'approval_requested', q)).length >= 5);
    assert.ok((await auditRows(home, 'approved', q)).some((r: any) => r.tool === 'delete_file'));
    assert.ok((await auditRows(home, 'rejected', q)).some((r: any) => /wrong server/.test(r.message)));
    const metrics = await (await fetch(`${serve.base}/metrics`)).text();
    assert.match(metrics, /toolgate_pending_approvals \d+/);
    assert.match(metrics, /toolgate_approval_decisions_total\{outcome="approved"\} [1-9]/);
    assert.match(metrics, /toolgate_approval_decision_seconds_count\{outcome="denied"\} [1-9]/);
  });

  it('restart: a pending approval survives; approved while the gateway is down, the same call passes once afterwards', async () => {
    const client = await connect(serve.base);
    const args = { path: '/srv/restart' };
    await assert.rejects(client.callTool({ name: 'delete_file', arguments: args }, undefined, { timeout: 300 }), /timed out/i);
    const pending = await pendingFor(serve.base, 'delete_file', args);
    await client.close().catch(() => {});
    await serve.stop();
    const approved = await cli(home, ['approvals', 'approve', pending.id, '-c', config]);
    assert.equal(approved.code, 0, approved.stderr);
    serve = await startServe(home, config);
    assert.ok(!recorded(record).some((c) => c.args.path === '/srv/restart'), 'nothing forwarded on restart');
    const again = await connect(serve.base);
    assert.equal(denialText(await again.callTool({ name: 'delete_file', arguments: args })), undefined);
    assert.equal(recorded(record).filter((c) => c.args.path === '/srv/restart').length, 1);
    await again.close();
  });
});
