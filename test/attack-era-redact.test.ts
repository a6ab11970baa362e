/**
 * Result redaction as an outside attacker tried to get a planted secret past it (attack-era):
 * each gap found is asserted closed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompiledPolicy } from '../src/engine/index.js';
import type { CallContext } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import type { Json } from '../src/proxy/messages.js';
import { shapeFromServer } from '../src/results/index.js';
import { world } from './helpers/tasks.js';

const AWS = 'AKIAIOSFODNN7EXAMPLE';

function compiled(policy: Record<string, unknown>): CompiledPolicy {
  const r = validatePolicyObject({ version: '1', default: 'allow', ...policy });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return new CompiledPolicy(r.policy, r.hash);
}

const ctx = (tool: string): CallContext => ({ tool, args: {}, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'srv' }, now: Date.now() });
const POLICY = compiled({ results: { redact: ['secrets'] } });

function shapedText(result: Record<string, unknown>, answering: { method: string; tool?: string; taskTool?: string } = { method: 'tools/call', tool: 't' }): string {
  const message = { jsonrpc: '2.0', id: 1, result };
  return JSON.stringify(shapeFromServer(POLICY, message, answering, ctx)?.message ?? message);
}

describe('attack: a planted secret past result redaction', () => {
  it('a secret in a tools/call result\'s own _meta is redacted (the client receives _meta as it receives the content)', () => {
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: 'ok' }], _meta: { 'example.com/debug': `key ${AWS}` } }), new RegExp(AWS));
  });

  it('a task\'s answer carries its tool\'s result: tasks/result and an inline tasks/get result are redacted', () => {
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: `report ${AWS}` }] }, { method: 'tasks/result', taskTool: 't' }), new RegExp(AWS));
    assert.doesNotMatch(shapedText({ taskId: 'x', status: 'completed', result: { content: [{ type: 'text', text: `report ${AWS}` }] } }, { method: 'tasks/get', taskTool: 't' }), new RegExp(AWS));
  });

  it('a secret used as an object key is redacted: the key becomes its marker, and two such keys stay apart', () => {
    assert.doesNotMatch(shapedText({ content: [], structuredContent: { [AWS]: 'aws key id' } }), new RegExp(AWS));
    const other = 'AKIAABCDEFGHIJKLMNOP';
    const text = shapedText({ content: [], structuredContent: { [AWS]: 'one', [other]: 'two', '[REDACTED aws-access-key] 2': 'three', plain: 'four' } });
    assert.doesNotMatch(text, new RegExp(`${AWS}|${other}`));
    const sc = (JSON.parse(text) as { result: { structuredContent: Record<string, string> } }).result.structuredContent;
    assert.deepEqual(Object.values(sc).sort(), ['four', 'one', 'three', 'two'], 'no value is lost to a collision');
    assert.equal(sc.plain, 'four');
    assert.equal(sc['[REDACTED aws-access-key]'], 'one');
  });

  it('a URL-encoded secret after a percent-escape (key%3DAKIA…, %22AKIA…, %20ghp_…) is redacted: the escape counts as a word boundary', () => {
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: `https://x.example/?q=key%3D${AWS}` }] }), new RegExp(AWS));
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: `q=%22${AWS}%22&r=%3a${AWS}` }] }), new RegExp(AWS));
    const ghp = `ghp_${'a1B2'.repeat(9)}`;
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: `auth%20${ghp}` }] }), new RegExp(ghp));
    // Not after any word character: `xAKIA…` is still not a key.
    assert.match(shapedText({ content: [{ type: 'text', text: `x${AWS}` }] }), new RegExp(AWS));
  });

  it('a private key split across two content blocks, or cut before its END line, is redacted from its header', () => {
    for (const cut of ['-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nYWJjZGVmZ2hpams=', '-----BEGIN OPENSSH PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n']) {
      const out = shapedText({ content: [{ type: 'text', text: `key:\n${cut}` }] });
      assert.doesNotMatch(out, /MIIEvQIBADANBgkq|YWJjZGVmZ2hpams/);
      assert.match(out, /key:/, 'what comes before the header is kept');
    }
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: 'cut here -----BEGIN EC PRIVATE KEY-----' }] }), /BEGIN EC PRIVATE KEY/);
    // The other half, base64 lines then END without a BEGIN, is redacted too; a line of prose before it is kept.
    for (const nl of ['\n', '\r\n', '\\n']) {
      const out = shapedText({ content: [{ type: 'text', text: `the rest:${nl}MIIEpAIBAAKCAQEAx4YzQ2Fz${nl}ZWRhdGFzZWNyZXQ=${nl}-----END RSA PRIVATE KEY-----` }] });
      assert.doesNotMatch(out, /MIIEpAIBAAKCAQEAx4Yz|ZWRhdGFzZWNyZXQ/, JSON.stringify(nl));
      assert.match(out, /the rest:/);
    }
    const text = shapedText({ content: [
      { type: 'text', text: '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAx4YzQ2FzZWRhdGFzZWNyZXQ=' },
      { type: 'text', text: 'MIIEpAIBAAKCAQEAx4Yz\n-----END RSA PRIVATE KEY-----' },
    ] });
    assert.doesNotMatch(text, /MIIEpAIBAAKCAQEAx4YzQ2Fz/);
  });

  it('a plain-text secret under a key named blob or data is redacted unless it is a content block\'s binary payload', () => {
    assert.doesNotMatch(shapedText({ content: [], structuredContent: { blob: AWS, file: { mimeType: 'text/plain', data: AWS } } }), new RegExp(AWS));
    // Even shaped like a content block: under structuredContent it is the tool's own JSON.
    assert.doesNotMatch(shapedText({ content: [], structuredContent: { img: { type: 'image', mimeType: 'image/png', data: AWS } } }), new RegExp(AWS));
    // `data` beside a mimeType but not on an image or audio block is text.
    assert.doesNotMatch(shapedText({ content: [{ type: 'text', text: 'ok', mimeType: 'text/plain', data: AWS } as Record<string, unknown>] }), new RegExp(AWS));
    // A real image block's data and a resource's blob are binary and left as they are.
    const kept = shapedText({ content: [{ type: 'image', mimeType: 'image/png', data: AWS }, { type: 'resource', resource: { uri: 'file:///a', mimeType: 'application/octet-stream', blob: AWS } }] });
    assert.equal(kept.split(AWS).length - 1, 2);
  });
});

describe('attack: a task notification (io.modelcontextprotocol/tasks) carries the task result past redaction', () => {
  it('notifications/tasks with an inline result is redacted under the task tool\'s result policy', async () => {
    const w = world({ version: '1', default: 'allow', tools: { research: { results: { redact: ['secrets'] } } } });
    const t = w.open('alpha', { era: 'modern' });
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    };
    t.s.fromClient({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'research', arguments: { topic: 'x' }, _meta: meta } });
    for (let i = 0; i < 50 && t.toServer.length === 0; i++) await new Promise((r) => setImmediate(r));
    const forwarded = t.toServer.at(-1)!;
    t.s.fromServer({ jsonrpc: '2.0', id: forwarded.id, result: { resultType: 'task', taskId: 'task-1', status: 'working', ttlMs: 60_000 } });
    await t.answer('c1');
    t.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId: 'task-1', status: 'completed', ttlMs: 60_000, result: { content: [{ type: 'text', text: `report ${AWS}` }] } } });
    let note: Json | undefined;
    for (let i = 0; i < 200 && !note; i++) {
      note = t.toClient.find((m) => m.method === 'notifications/tasks');
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(note, 'the owner hears of its task');
    assert.doesNotMatch(JSON.stringify(note), new RegExp(AWS));
  });
});

describe('attack: a server request tied to a running task (2025-11-25 related-task) skipped redaction', () => {
  it('an elicitation/create about the grant\'s own task is redacted like any other', async () => {
    const w = world({ version: '1', default: 'allow', results: { redact: ['secrets'] } });
    const t = w.open('alpha');
    t.s.fromClient({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'research', arguments: { topic: 'x' }, task: { ttl: 60_000 } } });
    for (let i = 0; i < 50 && t.toServer.length === 0; i++) await new Promise((r) => setImmediate(r));
    const forwarded = t.toServer.at(-1)!;
    t.s.fromServer({ jsonrpc: '2.0', id: forwarded.id, result: { task: { taskId: 'task-1', status: 'working', ttl: 60_000, createdAt: new Date().toISOString() } } });
    await t.answer('c1');
    t.s.fromServer({ jsonrpc: '2.0', id: 'srv-1', method: 'elicitation/create', params: { mode: 'form', message: `Confirm key ${AWS}`, requestedSchema: { type: 'object', properties: {} }, _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'task-1' } } } });
    const asked = await t.answer('srv-1');
    assert.equal(asked.method, 'elicitation/create', 'the owner is asked');
    assert.doesNotMatch(JSON.stringify(asked), new RegExp(AWS));
  });
});
