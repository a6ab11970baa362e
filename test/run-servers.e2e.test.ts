import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AuditLog } from '../src/audit/index.js';
import { connectThroughToolgate, denialText, EVERYTHING, FILESYSTEM, MEMORY, tempDir, writePolicy, type Connected } from './helpers/toolgate.js';

const text = (r: any): string => r.content?.map((c: any) => c.text ?? '').join('\n') ?? '';

describe('toolgate run + server-everything', () => {
  let c: Connected;
  let client: Client;
  const sampled: string[] = [];
  before(async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, {
      version: '1',
      default: 'allow',
      hide: ['toggle-*', 'gzip-file-as-resource'],
      tools: {
        'get-sum': { limits: [{ counter: 'sum', window: 'day', max: 3 }] },
        'get-tiny-image': { action: 'deny', on_deny: 'No images today.' },
      },
    });
    c = await connectThroughToolgate({
      policy,
      server: [EVERYTHING],
      env: { EVERYTHING_TEST_API_KEY: 'sk-from-mcp-json' },
      capabilities: { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
    });
    client = c.client;
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      sampled.push(JSON.stringify(req.params.messages));
      return { model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled through toolgate' } };
    });
    client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada', check: true } }));
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///tmp/toolgate-root', name: 'toolgate-root' }] }));
  });
  after(() => c.close());

  it('removes hidden tools from tools/list and keeps the rest', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('echo') && names.includes('get-sum') && names.includes('trigger-sampling-request'));
    assert.ok(!names.some((n) => n.startsWith('toggle-')), names.join());
    assert.ok(!names.includes('gzip-file-as-resource'));
  });

  it('denies a hidden tool at call time without confirming it exists', async () => {
    const r = await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    assert.equal(denialText(r), '[POLICY DENIED] Tool "toggle-simulated-logging" is not available.');
    assert.deepEqual((r._meta as any)['dev.toolgate/decision'], { rule: '/hide/0', retryAfterSeconds: null });
  });

  it('denies with the policy message', async () => {
    const r = await client.callTool({ name: 'get-tiny-image', arguments: {} });
    assert.equal(denialText(r), '[POLICY DENIED] No images today.');
  });

  it('forwards allowed calls and enforces an exact limit', async () => {
    for (let i = 0; i < 3; i++) assert.match(text(await client.callTool({ name: 'get-sum', arguments: { a: i, b: 1 } })), new RegExp(`The sum of ${i} and 1 is ${i + 1}`));
    const r = await client.callTool({ name: 'get-sum', arguments: { a: 1, b: 1 } });
    assert.match(denialText(r)!, /Limit reached: 3 calls per day/);
    assert.ok((r._meta as any)['dev.toolgate/decision'].retryAfterSeconds > 0);
  });

  it('passes progress notifications through', async () => {
    const progress: number[] = [];
    const r = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.4, steps: 4 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    assert.match(text(r), /Long running operation completed/);
    assert.ok(progress.length >= 3, `got progress ${JSON.stringify(progress)}`); // SDK may drop the last one (typescript-sdk#2580)
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b));
  });

  it('routes sampling requests from the server to the client and back', async () => {
    const r = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello from the test', maxTokens: 5 } });
    assert.match(text(r), /sampled through toolgate/);
    assert.ok(sampled.some((s) => s.includes('hello from the test')));
  });

  it('routes elicitation to the client and its answer back', async () => {
    const r = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    assert.match(text(r), /Ada/);
  });

  it('routes roots/list to the client', async () => {
    const r = await client.callTool({ name: 'get-roots-list', arguments: {} });
    assert.match(text(r), /toolgate-root/);
  });

  it('passes resources, prompts and pings through unchanged', async () => {
    assert.ok((await client.listResources()).resources.length > 0);
    assert.ok((await client.listPrompts()).prompts.length > 0);
    assert.deepEqual(await client.ping(), {});
  });

  it('gives the child toolgate\'s whole environment (API keys from .mcp.json)', async () => {
    const r = await client.callTool({ name: 'get-env', arguments: {} });
    assert.match(text(r), /EVERYTHING_TEST_API_KEY/);
    assert.match(text(r), /sk-from-mcp-json/);
  });

  it('audits every decision without argument values', () => {
    const log = new AuditLog(join(c.home, 'audit.db'));
    const rows = log.query({ kind: 'call' });
    assert.ok(rows.some((r) => r.decision === 'deny' && r.rule === '/hide/0' && r.client === 'toolgate-test'));
    const sum = rows.find((r) => r.tool === 'get-sum' && r.decision === 'allow')!;
    assert.equal(sum.server, '@modelcontextprotocol/server-everything');
    assert.equal(sum.grant_label, 'local');
    assert.deepEqual(JSON.parse(sum.arg_keys!), ['a', 'b']);
    assert.match(sum.args_sha256!, /^[0-9a-f]{64}$/);
    assert.equal(sum.args, null);
    assert.equal(sum.outcome, 'result');
    assert.ok(log.verify().ok);
    assert.ok(!rows.some((r) => JSON.stringify(r).includes('sk-from-mcp-json')));
    log.close();
  });
});

describe('toolgate run + server-filesystem', () => {
  let c: Connected;
  let sandbox: string;
  before(async () => {
    sandbox = tempDir('toolgate-fs-');
    writeFileSync(join(sandbox, 'notes.txt'), 'hello');
    const policy = writePolicy(tempDir(), {
      version: '1',
      default: 'deny',
      tools: {
        read_text_file: {},
        list_directory: {},
        move_file: { limits: [{ counter: 'moves', window: 'minute', max: 1 }] },
        write_file: { deny_if: [{ conditions: [{ path: 'args.path', op: 'ends_with', value: '.sh' }], on_deny: 'No scripts.' }] },
      },
    });
    c = await connectThroughToolgate({ policy, server: [FILESYSTEM, sandbox] });
  });
  after(() => c.close());

  it('a denied call never reaches the server', async () => {
    const r = await c.client.callTool({ name: 'write_file', arguments: { path: join(sandbox, 'evil.sh'), content: 'rm -rf /' } });
    assert.equal(denialText(r), '[POLICY DENIED] No scripts.');
    assert.equal(existsSync(join(sandbox, 'evil.sh')), false);
  });

  it('default deny refuses unlisted tools, allowed ones run', async () => {
    const r = await c.client.callTool({ name: 'create_directory', arguments: { path: join(sandbox, 'd') } });
    assert.match(denialText(r)!, /^\[POLICY DENIED\] The policy has no entry for "create_directory" .* add "create_directory": \{\} under "tools"/);
    assert.equal(existsSync(join(sandbox, 'd')), false);
    await c.client.callTool({ name: 'write_file', arguments: { path: join(sandbox, 'ok.txt'), content: 'fine' } });
    assert.equal(readFileSync(join(sandbox, 'ok.txt'), 'utf8'), 'fine');
    assert.match(text(await c.client.callTool({ name: 'read_text_file', arguments: { path: join(sandbox, 'notes.txt') } })), /hello/);
  });

  it('limits move_file to one per minute', async () => {
    await c.client.callTool({ name: 'move_file', arguments: { source: join(sandbox, 'notes.txt'), destination: join(sandbox, 'moved.txt') } });
    assert.ok(existsSync(join(sandbox, 'moved.txt')));
    const r = await c.client.callTool({ name: 'move_file', arguments: { source: join(sandbox, 'moved.txt'), destination: join(sandbox, 'again.txt') } });
    assert.match(denialText(r)!, /Limit reached/);
    assert.ok(existsSync(join(sandbox, 'moved.txt')));
  });
});

describe('toolgate run + server-memory', () => {
  let c: Connected;
  before(async () => {
    const dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow', tools: { delete_entities: { action: 'deny', on_deny: 'Memory is append-only here.' } } });
    c = await connectThroughToolgate({ policy, server: [MEMORY], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } });
  });
  after(() => c.close());

  it('keeps what a denied delete would have removed', async () => {
    await c.client.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] } });
    const r = await c.client.callTool({ name: 'delete_entities', arguments: { entityNames: ['Ada'] } });
    assert.equal(denialText(r), '[POLICY DENIED] Memory is append-only here.');
    assert.match(text(await c.client.callTool({ name: 'read_graph', arguments: {} })), /Ada/);
  });
});
