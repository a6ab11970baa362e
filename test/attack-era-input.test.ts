/**
 * An upstream's input_required answer (MCP 2026-07-28) as an attacker's way past result
 * redaction (attack-era): what the upstream asks the user, and any text beside it, is what the
 * client shows — a planted secret in it must be redacted as in any answer, and the upstream's
 * own requestState must still come back to it unchanged.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { RequestStates } from '../src/input/request-state.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { PolicySession } from '../src/proxy/session.js';
import { openMemoryState } from '../src/state/memory.js';

const AWS = 'AKIAIOSFODNN7EXAMPLE';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';

const wait = async (found: () => unknown) => {
  for (let i = 0; i < 200 && !found(); i++) await new Promise((r) => setTimeout(r, 5));
  return found();
};

describe('attack: a secret in an upstream\'s input_required answer', () => {
  it('is redacted in its inputRequests; the upstream\'s requestState (a JWT-looking token) still reaches it unchanged on the retry', async () => {
    const r = validatePolicyObject({ version: '1', default: 'allow', results: { redact: ['secrets'] } });
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    const state = openMemoryState();
    const toClient: Json[] = [];
    const toServer: Json[] = [];
    const s = new PolicySession({
      engine: new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: state.counters, flags: state.flags }),
      log: pino({ level: 'silent' }), clientEra: 'modern',
      identity: { sessionId: 's1', serverName: 'files', grant: { id: 'gr_1', label: 'ci', tags: [] } },
      requestStates: new RequestStates(state.requestStates),
      toClient: (m) => toClient.push(m),
      toServer: (m) => toServer.push(m),
    });
    s.fromClient({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    s.fromServer({ jsonrpc: '2.0', id: 'init', result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'files', version: '1' } } });
    s.fromClient({ jsonrpc: '2.0', method: 'notifications/initialized' });
    toClient.length = 0;
    toServer.length = 0;

    s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_env', arguments: {} } });
    const forwarded = await wait(() => toServer.find((m) => m.method === 'tools/call')) as Json;
    s.fromServer({ jsonrpc: '2.0', id: forwarded.id, result: {
      resultType: 'input_required',
      inputRequests: { q: { method: 'elicitation/create', params: { mode: 'form', message: `Share the key ${AWS}?`, requestedSchema: { type: 'object', properties: {} } } } },
      requestState: JWT,
    } });
    const asked = await wait(() => toClient.find((m) => m.id === 1)) as Json;
    assert.ok(asked, 'the client hears the round');
    assert.doesNotMatch(JSON.stringify(asked), new RegExp(AWS), 'the upstream\'s question carries the planted secret');
    const result = asked.result as Json;
    assert.equal(result.resultType, 'input_required');

    toServer.length = 0;
    s.fromClient({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_env', arguments: {}, inputResponses: { q: { action: 'accept', content: {} } }, requestState: result.requestState } });
    const retry = await wait(() => toServer.find((m) => m.method === 'tools/call')) as Json;
    assert.equal((retry.params as Json).requestState, JWT, 'the upstream gets its own state back unchanged');
  });
});
