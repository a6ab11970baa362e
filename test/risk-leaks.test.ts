import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CompiledPolicy, Engine, type CallContext } from '../src/engine/index.js';
import { isPrivateAddress } from '../src/engine/private-address.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { classifyTools, recommendPolicy, type ToolDefinition } from '../src/risk/index.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { BIN, denialText, EVERYTHING, ROOT, tempDir, testEnv } from './helpers/toolgate.js';

/** SPEC section 5: recommended rules that know what leaks, and the private_address operator behind the SSRF rule. */

describe('private_address: every spelling a URL parser accepts', () => {
  const privateOnes = [
    'http://127.0.0.1/', 'http://2130706433/', 'http://0x7f.1/', 'http://0177.0.0.1/', 'http://127.1/', 'http://0x7f000001/',
    'http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://[::1]:8080/', 'http://[::]/', 'http://0.0.0.0/', 'http://0/',
    'http://localhost./', 'HTTP://LOCALHOST/', 'http://app.localhost/', 'http://trusted.example.com@127.0.0.1/',
    'http://user:pass@[::1]/', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254/latest', 'localhost:8080',
    'http://metadata.google.internal/computeMetadata/v1/', 'http://metadata.google.internal./', 'http://100.100.100.200/',
    'http://[fd00:ec2::254]/', 'http://[fe80::1]/', 'http://[fc00::1]/', 'http://[64:ff9b::a9fe:a9fe]/', 'http://[2002:7f00:1::]/',
    'http://10.0.0.1/', 'http://172.16.0.1/', 'http://172.31.255.255/', 'http://192.168.1.1/', 'http://100.64.0.1/',
    'http://１２７.０.０.１/', 'file:///etc/passwd', 'http://[::1', 'gopher://127.0.0.1:6379/_FLUSHALL',
  ];
  const publicOnes = ['https://example.com/', 'http://8.8.8.8/', 'https://[2606:4700:4700::1111]/', 'http://172.32.0.1/', 'https://api.github.com/repos', 'data:text/plain;base64,aGk='];
  for (const u of privateOnes) it(`${u} is private`, () => assert.equal(isPrivateAddress(u), true));
  for (const u of publicOnes) it(`${u} is not`, () => assert.equal(isPrivateAddress(u), false));
  it('is false for anything but a string', () => {
    for (const v of [undefined, null, 2130706433, ['http://127.0.0.1'], { host: '127.0.0.1' }]) assert.equal(isPrivateAddress(v), false);
  });

  it('decides calls as a deny_if condition, over arrays with [*], and is validated', async () => {
    const policy = { version: '1', default: 'deny', tools: { fetch: { deny_if: [{ conditions: [{ path: 'args.urls[*]', op: 'private_address', value: true }], on_deny: 'No private addresses.' }] } } };
    const r = validatePolicyObject(policy);
    assert.ok(r.ok);
    const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
    const ctx = (urls: string[]): CallContext => ({ tool: 'fetch', args: { urls }, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'x' }, now: Date.now() });
    assert.equal((await engine.decide(ctx(['https://example.com/', 'http://0x7f.1/']))).verdict, 'deny');
    assert.equal((await engine.decide(ctx(['https://example.com/']))).verdict, 'allow');
    const bad = validatePolicyObject({ version: '1', tools: { f: { deny_if: [{ conditions: [{ path: 'args.url', op: 'private_address', value: 'yes' }] }] } } });
    assert.ok(!bad.ok && bad.issues.some((i) => /private_address takes true or false/.test(i.message)));
  });
});

describe('recommended rules that know what leaks (real tools)', () => {
  const corpus = (server: string) => JSON.parse(readFileSync(join(ROOT, 'test/corpus/servers', `${server}.json`), 'utf8')) as { server: { name?: string }; tools: ToolDefinition[] };

  it('server-everything: get-env needs approval, gzip-file-as-resource is limited and refuses private addresses', () => {
    const { tools, server } = corpus('everything');
    const policy = recommendPolicy(classifyTools(tools, { name: server.name }), tools);
    assert.equal(policy.tools!['get-env'].action, 'approve');
    assert.match(policy.tools!['get-env'].description!, /credential-leak/);
    assert.deepEqual(policy.tools!['get-sum'], {}, 'an ordinary read stays allowed');
  });

  it('exa web_fetch_exa (a Read that fetches any URL): rate-limited like a Write, with a private_address deny_if on every URL', () => {
    const { tools, server } = corpus('exa');
    const entry = recommendPolicy(classifyTools(tools, { name: server.name }), tools).tools!.web_fetch_exa;
    assert.deepEqual(entry.limits, [{ counter: 'web_fetch_exa_rate', window: 'minute', max: 30, scope: 'grant' }]);
    assert.deepEqual(entry.deny_if![0].conditions, [{ path: 'args.urls[*]', op: 'private_address', value: true }]);
    assert.match(entry.description!, /ssrf/);
  });

  it('a search tool that takes no URL keeps its plain allow', () => {
    const [c] = classifyTools([{ name: 'web_search', description: 'Search the web', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } }]);
    assert.deepEqual(recommendPolicy([c], [{ name: 'web_search', description: 'Search the web', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } }]).tools!.web_search, {});
  });
});

describe('toolgate run without -p in front of server-everything', () => {
  const home = tempDir();
  after(() => rmSync(home, { recursive: true, force: true }));

  it('holds get-env for approval and refuses the metadata address in every spelling, while public URLs pass the rule', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', '--', process.execPath, EVERYTHING], env: testEnv(home), stderr: 'ignore' });
    const client = new Client({ name: 'leaks-test', version: '1' });
    await client.connect(transport);
    try {
      await client.listTools();
      // get-env is held: the call waits for a person, is listed as pending, and never reaches the server.
      await assert.rejects(client.callTool({ name: 'get-env', arguments: {} }, undefined, { timeout: 1000 }), /timed out/i);
      const listed = spawnSync(process.execPath, [BIN, 'approvals', 'list', '--json'], { env: testEnv(home), encoding: 'utf8' });
      assert.equal(listed.status, 0, listed.stderr);
      assert.ok((JSON.parse(listed.stdout) as { tool: string }[]).some((a) => a.tool === 'get-env'), 'get-env waits for approval');
      for (const data of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]:1/', 'http://2130706433/', 'http://localhost./']) {
        const r = await client.callTool({ name: 'gzip-file-as-resource', arguments: { data } });
        assert.match(denialText(r) ?? '', /private-range and cloud-metadata addresses are refused/, data);
      }
      const ok = await client.callTool({ name: 'gzip-file-as-resource', arguments: { data: 'data:text/plain;base64,aGVsbG8=' } });
      assert.equal(denialText(ok), undefined, 'a data: URI reaches no host and is not refused');
    } finally {
      await client.close();
    }
  });
});
