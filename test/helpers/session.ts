import { pino } from 'pino';
import { CompiledPolicy, Engine } from '../../src/engine/index.js';
import { validatePolicyObject } from '../../src/policy/index.js';
import type { Json } from '../../src/proxy/messages.js';
import { PolicySession } from '../../src/proxy/session.js';
import { MemoryCounterStore } from '../../src/state/memory.js';

/** An in-process session on memory counters, with what it sent each way (a policy denying echo of /etc by default). */
export function session(policy: Json = { version: '1', default: 'allow', tools: { echo: { deny_if: [{ conditions: [{ path: 'args.path', op: 'starts_with', value: '/etc' }] }] } } }) {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
  const toClient: Json[] = [];
  const toServer: Json[] = [];
  const s = new PolicySession({
    engine,
    identity: { sessionId: 's1', serverName: 'srv', grant: { label: 'ci', tags: [] } },
    log: pino({ level: 'silent' }),
    toClient: (m) => toClient.push(m),
    toServer: (m) => toServer.push(m),
  });
  const answer = (id: unknown) => toClient.find((m) => m.id === id) as { error?: { code: number; message: string }; result?: Json } | undefined;
  return { s, toClient, toServer, answer };
}

/** A session past initialize, answered by a server speaking `version`. */
export function initialized(version = '2025-06-18') {
  const t = session();
  t.s.fromClient({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
  t.s.fromServer({ jsonrpc: '2.0', id: 0, result: { protocolVersion: version, capabilities: {}, serverInfo: { name: 's', version: '1' } } });
  t.toServer.length = 0;
  return t;
}

