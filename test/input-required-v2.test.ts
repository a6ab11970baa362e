import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
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

/**
 * The official SDK v2 client, pinned to 2026-07-28, against a real session: does it complete the
 * multi round-trip calls toolgate answers (its auto-fulfilment driver: the elicitation handler,
 * then the retry with inputResponses and the requestState echoed)? The front door here is a few
 * lines standing in for era-front's modern adapter (server/discover, the synthesized initialize,
 * resultType on results); the upstream is a function.
 */

const log = pino({ level: 'silent' });
const closing: { close(): void }[] = [];
after(() => { for (const c of closing) c.close(); });

type Upstream = (m: Json) => Json | undefined;

async function through(policy: unknown, upstream: Upstream, elicit: (params: Json) => Json) {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const state = openMemoryState();
  const audit = new AuditLog(join(tempDir(), 'audit.db'));
  const approvals = new Approvals({ store: state.approvals, audit, log });
  closing.push(audit, approvals);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const received: Json[] = [];
  const session: PolicySession = new PolicySession({
    engine: new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: state.counters, flags: state.flags }),
    audit, approvals, log, clientEra: 'modern', requestStates: new RequestStates(state.requestStates),
    identity: { sessionId: 'stateless', serverName: 'files', grant: { id: 'gr_1', label: 'ci', tags: [] } },
    toClient: (m) => {
      if (m.id === 'front-init') return;
      const result = m.result as Json | undefined;
      void serverSide.send((result && result.resultType === undefined ? { ...m, result: { ...result, resultType: 'complete' } } : m) as never);
    },
    toServer: (m) => {
      if (m.method === 'tools/call') received.push(m.params as Json);
      const answer = m.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'files', version: '1' } }
        : m.method === 'tools/list' ? { tools: [{ name: 'delete_file', inputSchema: { type: 'object' } }, { name: 'confirm_delete', inputSchema: { type: 'object' } }] }
          : upstream(m);
      if (answer && m.id !== undefined) queueMicrotask(() => session.fromServer({ jsonrpc: '2.0', id: m.id, result: answer }));
    },
  });
  let opened = false;
  serverSide.onmessage = (message) => {
    const m = message as Json;
    const meta = ((m.params as Json | undefined)?._meta ?? {}) as Json;
    if (m.method === 'server/discover') {
      void serverSide.send({ jsonrpc: '2.0', id: m.id, result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, serverInfo: { name: 'toolgate', version: 'test' } } } as never);
      return;
    }
    if (!opened && m.id !== undefined) {
      opened = true;
      session.fromClient({ jsonrpc: '2.0', id: 'front-init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: meta['io.modelcontextprotocol/clientCapabilities'] ?? {}, clientInfo: meta['io.modelcontextprotocol/clientInfo'] } });
      session.fromClient({ jsonrpc: '2.0', method: 'notifications/initialized' });
    }
    session.fromClient(m);
  };
  await serverSide.start();
  const client = new Client({ name: 'v2-agent', version: '1' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } } as never);
  client.setRequestHandler('elicitation/create' as never, (async (req: Json) => elicit(req.params as Json)) as never);
  await client.connect(clientSide);
  closing.push({ close: () => { void client.close(); } });
  const rows = () => { audit.flush(); return audit.query({ kind: 'call' }); };
  return { client, received, rows };
}

const APPROVE = { version: '1', default: 'allow', tools: { delete_file: { action: 'approve', approval: { via: ['client'] } } } };
const done = (m: Json) => (m.method === 'tools/call' ? { content: [{ type: 'text', text: `ran ${JSON.stringify(m.params)}` }] } : undefined);

describe('SDK v2 client (2026-07-28) through a session: input_required', () => {
  it('via: client — the user approves in the client\'s elicitation handler; the call runs once, alone', async () => {
    const asked: Json[] = [];
    const t = await through(APPROVE, done, (p) => { asked.push(p); return { action: 'accept', content: { decision: 'approve' } }; });
    const r = await t.client.callTool({ name: 'delete_file', arguments: { path: '/srv/a' } });
    assert.equal(asked.length, 1);
    assert.match(asked[0].message as string, /holding a call to "delete_file" for approval [a-z2-9]{10}/);
    assert.deepEqual(t.received.map((p) => ({ name: p.name, arguments: p.arguments, inputResponses: p.inputResponses, requestState: p.requestState })),
      [{ name: 'delete_file', arguments: { path: '/srv/a' }, inputResponses: undefined, requestState: undefined }]);
    assert.match(JSON.stringify(r.content), /ran/);
    const rows = t.rows();
    assert.deepEqual(rows.map((x) => [x.decision, x.outcome]), [['allow', 'result after 2 rounds']]);
  });

  it('via: client — the user declines; the agent reads the denial, nothing runs', async () => {
    const t = await through(APPROVE, done, () => ({ action: 'decline' }));
    const r = await t.client.callTool({ name: 'delete_file', arguments: { path: '/srv/a' } });
    assert.equal(r.isError, true);
    assert.match(JSON.stringify(r.content), /\[POLICY DENIED\] Denied by client:v2-agent: decline in the client/);
    assert.deepEqual(t.received, []);
  });

  it('an upstream asks: the client answers it, the upstream gets its own state back, one row with two rounds', async () => {
    const upstream: Upstream = (m) => {
      const p = m.params as Json;
      if (p.requestState === 'theirs' && (p.inputResponses as Json | undefined)?.q) return { content: [{ type: 'text', text: 'deleted' }] };
      return { resultType: 'input_required', inputRequests: { q: { method: 'elicitation/create', params: { mode: 'form', message: 'Delete /srv/a?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } } }, requestState: 'theirs' };
    };
    const asked: Json[] = [];
    const t = await through({ version: '1', default: 'allow' }, upstream, (p) => { asked.push(p); return { action: 'accept', content: { ok: true } }; });
    const r = await t.client.callTool({ name: 'confirm_delete', arguments: { path: '/srv/a' } });
    assert.equal(asked[0].message, 'Delete /srv/a?');
    assert.match(JSON.stringify(r.content), /deleted/);
    assert.equal(t.received.length, 2);
    assert.equal(t.received[1].requestState, 'theirs');
    assert.deepEqual(t.received[1].inputResponses, { q: { action: 'accept', content: { ok: true } } });
    assert.deepEqual(t.rows().map((x) => [x.decision, x.outcome]), [['allow', 'result after 2 rounds']]);
  });
});
