import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { validatePolicyObject } from '../src/policy/index.js';
import {
  ATTACKS, attacksFor, classifyTool, classifyTools, gradeOf, probeAuth, recommendPolicy, RISKS, type Classification, type Risk,
} from '../src/risk/index.js';
import { BIN, EVERYTHING, FILESYSTEM, FIXTURES, MEMORY, tempDir, testEnv } from './helpers/toolgate.js';

const exec = promisify(execFile);

function toolgate(args: string[], home: string, input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { env: testEnv(home), maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

const SEEDS = {
  debugpy: { name: 'debugpy-mcp', instructions: 'Enables agents to attach debugpy to running Python processes inside Docker containers.' },
};

describe('classifier: the seed records come out as the seeds say', () => {
  const debugpy = classifyTools([
    { name: 'debugpy_connect', description: '' },
    { name: 'debugpy_session_status', description: 'Return the current state of a DAP session: connection, stopped position, breakpoints, mappings.' },
  ], SEEDS.debugpy);
  const [sessions] = classifyTools([{ name: 'sessions_create', description: 'Create a new debug session for a Python script' }], { name: 'debug-mcp' });
  const [remote] = classifyTools([{ name: 'remote_disconnect', description: 'Disconnect from the remote Jupyter Server and switch back to local kernels' }], { name: 'jupytermcp' });

  it('debugpy_connect: Execute/high, lowered confidence, server context as evidence', () => {
    const c = debugpy[0];
    assert.equal(c.category, 'Execute');
    assert.equal(c.risk, 'high');
    assert.ok(c.confidence < debugpy[1].confidence, 'no description lowers confidence');
    assert.deepEqual(c.signals, ['no_description']);
    assert.ok(c.evidence.some((e) => e.from === 'name' && e.text === 'connect'));
    assert.ok(c.evidence.some((e) => e.from === 'server' && /debugpy/i.test(e.text)));
    assert.match(c.rationale, /description is empty/);
  });

  it('debugpy_session_status Read/low, sessions_create Execute/high, remote_disconnect Write/medium', () => {
    assert.deepEqual([debugpy[1].category, debugpy[1].risk], ['Read', 'low']);
    assert.deepEqual([sessions.category, sessions.risk], ['Execute', 'high']);
    assert.deepEqual([remote.category, remote.risk], ['Write', 'medium']);
  });

  it('recommends exactly the seeds\' policy.json for each of them', () => {
    const cases: [string, Classification][] = [['debugpy_connect', debugpy[0]], ['sessions_create', sessions], ['remote_disconnect', remote]];
    for (const [name, c] of cases) {
      const seed = JSON.parse(readFileSync(join(FIXTURES, 'seeds', `${name}.policy.json`), 'utf8'));
      const ours = recommendPolicy([c]);
      assert.deepEqual(ours.tools, seed.tools, name);
      assert.equal(ours.default, seed.default);
    }
    assert.deepEqual(recommendPolicy([debugpy[1]]).tools, { debugpy_session_status: {} });
  });
});

describe('classifier: SPEC contract cases', () => {
  const cases: [string, string, string][] = [
    ['list_charges', 'List all charges', 'Read'],
    ['execute_sql', 'Execute a read-only SQL query', 'Execute'],
    ['remove_breakpoint', 'Remove a breakpoint', 'Write'],
    ['delete_repository', 'Delete a repository', 'Destructive'],
    ['create_refund', 'Refund a charge', 'Financial'],
    ['d1_database_delete', 'Delete a D1 database', 'Destructive'],
    ['refund_guide', 'Explains how refunds work, with links to the documentation.', 'Read'],
    ['createPullRequest', 'Create a pull request', 'Write'],
    ['policies.create', 'Create a policy', 'Write'],
    ['browser_click', 'Perform click on a web page', 'Execute'],
    // SPEC 5: navigating a real browser to a URL is Execute (the browser carries the user's sessions).
    ['browser_navigate', 'Navigate to a URL', 'Execute'],
    ['get_secret', 'Read a secret value', 'Read'],
    ['run_audit_report', 'Run the weekly access report', 'Read'],
  ];
  for (const [name, description, want] of cases) {
    it(`${name} is ${want}`, () => assert.equal(classifyTool({ name, description }).category, want));
  }

  it('reading credentials raises a Read to medium; bulk raises one step', () => {
    const secret = classifyTool({ name: 'get_secret', description: 'Read a secret value', inputSchema: { type: 'object', properties: { secret_name: { type: 'string' } } } });
    assert.equal(secret.risk, 'medium');
    assert.ok(secret.signals.includes('credentials'));
    const bulk = classifyTool({ name: 'bulk_update_issues', description: 'Update many issues at once' });
    assert.equal(bulk.category, 'Write');
    assert.equal(bulk.risk, 'high');
  });

  it('a readOnlyHint never makes a dangerous name safe; it lowers confidence', () => {
    const plain = classifyTool({ name: 'delete_user', description: 'Delete a user' });
    const hinted = classifyTool({ name: 'delete_user', description: 'Delete a user', annotations: { readOnlyHint: true } });
    assert.equal(hinted.category, 'Destructive');
    assert.ok(hinted.signals.includes('annotation_conflict'));
    assert.ok(hinted.confidence < plain.confidence);
    const raised = classifyTool({ name: 'update_record', description: 'Update a record', annotations: { destructiveHint: true } });
    assert.equal(raised.category, 'Destructive', 'destructiveHint: true makes a Write at least Destructive (issue 24)');
    assert.match(raised.rationale, /marks it destructive/);
  });

  it('schema signals: paths, URLs, code, many parameters; nothing matched gives low confidence', () => {
    const c = classifyTool({
      name: 'do_thing', description: '',
      inputSchema: { type: 'object', properties: Object.fromEntries(['path', 'url', 'query', 'a', 'b', 'c', 'd', 'e', 'f'].map((k) => [k, { type: 'string' }])) },
    });
    for (const s of ['filesystem_path', 'url', 'code_or_query', 'many_parameters', 'no_description']) assert.ok(c.signals.includes(s as never), s);
    assert.ok(c.confidence <= 0.35);
    assert.match(c.rationale, /Nothing in the name or description/);
  });

  it('an argument that carries a script makes a tool Execute even when nothing else says what it does', () => {
    const c = classifyTool({ name: 'do_thing', description: '', inputSchema: { type: 'object', properties: { script: { type: 'string' } } } });
    assert.equal(c.category, 'Execute', c.rationale);
    assert.ok(c.confidence <= 0.6);
    assert.match(c.rationale, /`script` argument takes a script/);
  });
});

describe('toolgate classify', () => {
  const tools = [{ name: 'read_file', description: 'Read a file' }, { name: 'delete_file', description: 'Delete a file' }];
  it('reads a tools/list result with server context, an array, or JSON Lines; prints JSON Lines in input order', async () => {
    const home = tempDir();
    for (const input of [
      JSON.stringify({ tools, server: { name: 'fs', instructions: 'files' } }),
      JSON.stringify(tools),
      tools.map((t) => JSON.stringify(t)).join('\n'),
    ]) {
      const r = await toolgate(['classify', '-'], home, input);
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
      assert.deepEqual(lines.map((l) => [l.name, l.category]), [['read_file', 'Read'], ['delete_file', 'Destructive']]);
      assert.deepEqual(Object.keys(lines[0]), ['name', 'category', 'risk', 'confidence', 'signals', 'rationale', 'evidence', 'flows']);
    }
  });

  it('rejects bad input in one line, exit 2', async () => {
    const r = await toolgate(['classify', '-'], tempDir(), '{"tools": [{"description": "no name"}]}');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^toolgate: tool #1 has no "name" string\n$/);
    const garbage = await toolgate(['classify', '-'], tempDir(), 'not json\n');
    assert.equal(garbage.code, 2);
    assert.match(garbage.stderr, /stdin:1: not JSON/);
  });

  it('classifies 10,000 tools, each by its own name, in input order', () => {
    // How fast is npm run bench's business (bench/classify.ts), not a test's.
    const verbs = ['get', 'create', 'delete', 'run', 'pay'];
    const many = Array.from({ length: 10_000 }, (_, i) => ({ name: `${verbs[i % 5]}_thing_${i}`, description: 'Does a thing with an item.' }));
    const out = classifyTools(many, { name: 'big' });
    assert.equal(out.length, 10_000);
    assert.ok(out.every((c, i) => c.name === many[i].name));
    assert.deepEqual(out.slice(0, 5).map((c) => c.category), classifyTools(many.slice(0, 5), { name: 'big' }).map((c) => c.category));
    assert.deepEqual(out.slice(0, 5).map((c) => c.category), ['Read', 'Write', 'Destructive', 'Execute', 'Financial']);
  });
});

describe('risk grade', () => {
  const c = (risk: Risk): Classification => ({ name: 'x', category: 'Read', risk, confidence: 1, signals: [], rationale: '', evidence: [] });
  it('is monotone: a riskier tool or a weaker posture never improves it', () => {
    const order = ['A', 'B', 'C', 'D', 'F'];
    for (let trial = 0; trial < 200; trial++) {
      const tools = Array.from({ length: 1 + (trial % 6) }, (_, i) => c(RISKS[(trial * 7 + i * 3) % 4]));
      const base = gradeOf(tools, { kind: 'local-process' }, 'pinned');
      const more = gradeOf([...tools, c(RISKS[trial % 4])], { kind: 'local-process' }, 'pinned');
      const open = gradeOf(tools, { kind: 'open', tls: false }, 'changed');
      assert.ok(order.indexOf(more.letter) >= order.indexOf(base.letter));
      assert.ok(order.indexOf(open.letter) >= order.indexOf(base.letter));
    }
    assert.equal(gradeOf([c('low')], { kind: 'local-process' }, 'pinned').letter, 'A');
    assert.equal(gradeOf([c('critical'), c('critical'), c('high')], { kind: 'open', tls: false }, 'unpinned').letter, 'F');
  });
});

describe('attack database', () => {
  it('has at least twelve patterns, each with targets and a mitigation', () => {
    assert.ok(ATTACKS.length >= 12);
    for (const a of ATTACKS) {
      assert.ok(a.title && a.description.length > 60 && a.mitigation.length > 20, a.id);
      assert.ok(a.categories.length > 0, a.id);
    }
    for (const id of ['runaway-loop', 'tool-poisoning', 'rug-pull', 'typosquatting', 'indirect-prompt-injection', 'exfiltration-chain', 'confused-deputy', 'credential-leak', 'command-injection', 'path-traversal', 'ssrf', 'mass-deletion', 'unapproved-payment']) {
      assert.ok(ATTACKS.some((a) => a.id === id), id);
    }
  });

  it('cites the patterns that fit a tool', () => {
    const pay = attacksFor(classifyTool({ name: 'create_payment', description: 'Create a payment' })).map((a) => a.id);
    assert.ok(pay.includes('unapproved-payment'));
    const shell = attacksFor(classifyTool({ name: 'run_command', description: 'Run a shell command', inputSchema: { type: 'object', properties: { command: { type: 'string' } } } })).map((a) => a.id);
    assert.ok(shell.includes('command-injection'));
    const fetchUrl = attacksFor(classifyTool({ name: 'fetch_url', description: 'Fetch a URL', inputSchema: { type: 'object', properties: { url: { type: 'string' } } } })).map((a) => a.id);
    assert.ok(fetchUrl.includes('ssrf') && !fetchUrl.includes('unapproved-payment'));
  });
});

describe('server records of real servers', () => {
  const home = tempDir();
  const sandbox = tempDir('toolgate-fs-');

  it('server-filesystem: categories, identity, posture, capabilities, recommended policy', async () => {
    const r = await toolgate(['record', '--json', '--', process.execPath, FILESYSTEM, sandbox], home);
    assert.equal(r.code, 0, r.stderr);
    const rec = JSON.parse(r.stdout);
    const cat = (n: string) => rec.tools.find((t: any) => t.name === n).classification.category;
    assert.equal(cat('read_text_file'), 'Read');
    assert.equal(cat('list_directory'), 'Read');
    // The server marks write_file, move_file and edit_file destructiveHint: true, which makes them at least Destructive (issue 24).
    assert.equal(cat('write_file'), 'Destructive');
    assert.equal(cat('move_file'), 'Destructive');
    assert.equal(cat('edit_file'), 'Destructive');
    assert.equal(cat('create_directory'), 'Write');
    assert.equal(rec.identity.origin.package, '@modelcontextprotocol/server-filesystem');
    assert.match(rec.identity.origin.version, /^\d+\.\d+\.\d+/);
    assert.match(rec.identity.fingerprint, /^[0-9a-f]{64}$/);
    assert.equal(rec.identity.verification, 'unpinned');
    assert.ok(rec.identity.protocolVersion);
    assert.equal(rec.auth.kind, 'local-process');
    assert.equal(rec.capabilities.tools.count, rec.tools.length);
    assert.equal(rec.tools.find((t: any) => t.name === 'write_file').classification.risk, 'critical');
    assert.deepEqual(rec.grade, { letter: 'F', points: 4, reasons: ['riskiest tool is critical (+3)', '3 tools are high or critical (+1)'] });
    assert.ok(validatePolicyObject(rec.recommendedPolicy).ok);
    assert.deepEqual(rec.recommendedPolicy.tools.read_text_file, {});
    assert.equal(rec.recommendedPolicy.tools.write_file.action, 'approve');
    assert.equal(rec.recommendedPolicy.tools.create_directory.limits[0].max, 30);
    for (const t of rec.tools) for (const s of ['description', 'classification', 'attacks', 'verdict', 'policy', 'faq']) assert.ok(s in t, `${t.name}.${s}`);
  });

  it('server-memory: deletes are Destructive and need approval; the secret env names are listed, never values', async () => {
    const env = { MEMORY_FILE_PATH: join(home, 'memory.jsonl'), MY_SERVICE_API_KEY: 'sk-live-very-secret' };
    const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, [BIN, 'record', '--json', '--', process.execPath, MEMORY], { env: testEnv(home, env) }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
    const rec = JSON.parse(out);
    for (const n of ['delete_entities', 'delete_observations', 'delete_relations']) {
      const t = rec.tools.find((x: any) => x.name === n);
      assert.equal(t.classification.category, 'Destructive');
      assert.equal(t.verdict, 'Needs approval');
      assert.ok(t.attacks.some((a: any) => a.id === 'mass-deletion'));
    }
    assert.equal(rec.tools.find((x: any) => x.name === 'create_entities').classification.category, 'Write');
    assert.equal(rec.tools.find((x: any) => x.name === 'read_graph').classification.category, 'Read');
    assert.ok(rec.auth.secretEnv.includes('MY_SERVICE_API_KEY'));
    assert.ok(!out.includes('sk-live-very-secret'));
  });

  it('server-everything: markdown and HTML pages, one per tool, stored in the catalog and searchable', async () => {
    const dir = join(tempDir(), 'everything');
    const r = await toolgate(['record', '--format', 'html', '-o', dir, '--', process.execPath, EVERYTHING], home);
    assert.equal(r.code, 0, r.stderr);
    const pages = readdirSync(join(dir, 'tools'));
    assert.ok(pages.includes('echo.html') && pages.includes('trigger-sampling-request.html'));
    const index = readFileSync(join(dir, 'index.html'), 'utf8');
    for (const p of pages) assert.ok(index.includes(`href="tools/${p}"`), p);
    const md = await toolgate(['record', '--format', 'md', '-o', join(dir, 'md'), '--', process.execPath, EVERYTHING], home);
    assert.equal(md.code, 0, md.stderr);
    const echo = readFileSync(join(dir, 'md', 'tools', 'echo.md'), 'utf8');
    for (const heading of ['## What it does', '## Why it needs a policy', '## Attacks that exploit this kind of access', '## Verdict', '## FAQ']) assert.ok(echo.includes(heading), heading);
    const list = await toolgate(['records', 'search', 'sampling', '--json'], home);
    const found = JSON.parse(list.stdout);
    assert.ok(found.some((x: any) => x.name === 'mcp-servers/everything'));
    const none = await toolgate(['records', 'search', 'no-such-thing-xyz'], home);
    assert.match(none.stdout, /no records match/);
  });
});

describe('recommended policies', () => {
  it('toolgate policy recommend prints a valid policy for a server or a tools file', async () => {
    const home = tempDir();
    const r = await toolgate(['policy', 'recommend', '--', process.execPath, MEMORY], home);
    assert.equal(r.code, 0, r.stderr);
    const policy = JSON.parse(r.stdout);
    assert.ok(validatePolicyObject(policy).ok);
    assert.equal(policy.default, 'deny');
    assert.equal(policy.tools.delete_entities.action, 'approve');
    const file = join(home, 'tools.json');
    writeFileSync(file, JSON.stringify({ tools: [{ name: 'create_refund', description: 'Refund a charge', inputSchema: { type: 'object', properties: { amount: { type: 'integer' }, charge: { type: 'string' } } } }] }));
    const money = JSON.parse((await toolgate(['policy', 'recommend', '--tools', file], home)).stdout);
    assert.equal(money.tools.create_refund.action, 'approve');
    assert.deepEqual(money.tools.create_refund.limits[0], { counter: 'create_refund_spend', window: 'day', max: 50000, scope: 'server', increment_from: 'args.amount', on_deny: 'Daily spend cap for create_refund reached (50000 in the units of amount).' });
    const none = await toolgate(['policy', 'recommend'], home);
    assert.equal(none.code, 2);
  });
});

describe('URL servers: auth posture', () => {
  async function fixture(requireKey: boolean): Promise<{ url: string; stop: () => void }> {
    const server = spawn(process.execPath, [join(FIXTURES, 'http-server.mjs'), '0'], { env: { ...process.env, ...(requireKey ? { REQUIRE_KEY: '1' } : {}) } });
    const port = await new Promise<number>((resolve) => server.stdout.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) resolve(Number(m[1])); }));
    return { url: `http://127.0.0.1:${port}/mcp`, stop: () => server.kill() };
  }

  it('open without credentials, token when refused without OAuth metadata; no TLS noted', async () => {
    const open = await fixture(false);
    const closed = await fixture(true);
    try {
      assert.deepEqual((({ kind, tls }) => ({ kind, tls }))(await probeAuth(open.url)), { kind: 'open', tls: false });
      assert.deepEqual((({ kind, tls }) => ({ kind, tls }))(await probeAuth(closed.url)), { kind: 'token', tls: false });
      const home = tempDir();
      const r = await toolgate(['record', '--json', '--upstream', closed.url, '--header', 'x-api-key: secret-123'], home);
      assert.equal(r.code, 0, r.stderr);
      const rec = JSON.parse(r.stdout);
      assert.equal(rec.auth.kind, 'token');
      assert.equal(rec.tools.find((t: any) => t.name === 'delete_everything').classification.category, 'Destructive');
      assert.ok(!r.stdout.includes('secret-123'));
    } finally {
      open.stop();
      closed.stop();
    }
  });
});

describe('pins: rug-pull defence', () => {
  it('a tool whose description changes after the pin is hidden and denied until accepted', async () => {
    const home = tempDir();
    const serverCmd = ['--name', 'lenient', '--', process.execPath, join(FIXTURES, 'lenient-server.mjs')];
    const pinned = await toolgate(['pin', ...serverCmd], home);
    assert.equal(pinned.code, 0, pinned.stderr);
    assert.match(pinned.stdout, /pinned 7 tools/);
    const policy = join(home, 'policy.json');
    writeFileSync(policy, JSON.stringify({ version: '1', default: 'allow', pins: { on_change: 'block' } }));

    const { RawSession } = await import('./helpers/toolgate.js');
    const raw = new RawSession(['-p', policy, '--name', 'lenient', '--', process.execPath, join(FIXTURES, 'lenient-server.mjs')], testEnv(home, { LENIENT_VARIANT: 'rugpull' }));
    await raw.initialize();
    const page1 = await raw.request('l1', 'tools/list', {});
    const page2 = await raw.request('l2', 'tools/list', { cursor: 'page-2' });
    const names = [...page1.result.tools, ...page2.result.tools].map((t: any) => t.name);
    assert.ok(!names.includes('echo'), 'the changed tool is hidden');
    assert.ok(!names.includes('exfiltrate'), 'a new tool is hidden');
    assert.ok(names.includes('slow'));
    const call = await raw.request('c1', 'tools/call', { name: 'echo', arguments: {} });
    assert.equal(call.result._meta['dev.toolgate/decision'].rule, '(pin)');
    const fresh = await raw.request('c2', 'tools/call', { name: 'exfiltrate', arguments: {} });
    assert.equal(fresh.result._meta['dev.toolgate/decision'].rule, '(pin)');
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const r = await raw.request(`proto-${name}`, 'tools/call', { name, arguments: {} });
      assert.equal(r.result._meta['dev.toolgate/decision'].rule, '(pin)', `${name} was never pinned`);
    }

    const refused = await new Promise<{ code: number; stdout: string }>((resolve) => execFile(process.execPath, [BIN, 'pin', ...serverCmd], { env: testEnv(home, { LENIENT_VARIANT: 'rugpull' }) }, (err, stdout) => resolve({ code: err ? 1 : 0, stdout })));
    assert.equal(refused.code, 1);
    assert.match(refused.stdout, /changed: echo; new: exfiltrate/);
    await exec(process.execPath, [BIN, 'pin', '--accept', ...serverCmd], { env: testEnv(home, { LENIENT_VARIANT: 'rugpull' }) });
    const again = await raw.request('l3', 'tools/list', {});
    assert.ok(again.result.tools.some((t: any) => t.name === 'echo'), 'accepted: listed again');
    const ok = await raw.request('c3', 'tools/call', { name: 'echo', arguments: {} });
    assert.match(ok.result.content[0].text, /^echo ran/);
    await raw.close();
  });

  it('in warn mode a changed tool stays callable and is logged', async () => {
    const home = tempDir();
    await exec(process.execPath, [BIN, 'pin', '--name', 'lenient', '--', process.execPath, join(FIXTURES, 'lenient-server.mjs')], { env: testEnv(home) });
    const policy = join(home, 'policy.json');
    writeFileSync(policy, JSON.stringify({ version: '1', default: 'allow' }));
    const { RawSession } = await import('./helpers/toolgate.js');
    const raw = new RawSession(['-p', policy, '--name', 'lenient', '--', process.execPath, join(FIXTURES, 'lenient-server.mjs')], testEnv(home, { LENIENT_VARIANT: 'rugpull' }));
    await raw.initialize();
    const list = await raw.request('l1', 'tools/list', {});
    assert.ok(list.result.tools.some((t: any) => t.name === 'echo'));
    assert.match((await raw.request('c1', 'tools/call', { name: 'echo', arguments: {} })).result.content[0].text, /^echo ran/);
    await raw.close();
    assert.match(raw.stderr, /tool definition changed since it was pinned/);
  });
});

describe('toolgate run without -p', () => {
  it('applies the recommended policy for the server it wraps, and says so once', async () => {
    const home = tempDir();
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', '--', process.execPath, MEMORY], env: testEnv(home, { MEMORY_FILE_PATH: join(home, 'm.jsonl'), TOOLGATE_LOG_LEVEL: 'info' }), stderr: 'pipe' });
    let stderr = '';
    transport.stderr!.on('data', (d) => { stderr += d; });
    const client = new Client({ name: 'no-policy', version: '1' });
    await client.connect(transport);
    const tools = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(tools.includes('delete_entities'), 'nothing is hidden by the recommendation');
    await client.callTool({ name: 'create_entities', arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: [] }] } });
    // Destructive: held for a person; this client gives up waiting, and nothing is deleted.
    await assert.rejects(client.callTool({ name: 'delete_entities', arguments: { entityNames: ['Ada'] } }, undefined, { timeout: 500 }), /timed out/i);
    assert.match(stderr, /"delete_entities" on @modelcontextprotocol\/server-memory is held for approval [2-9a-z]{10}/);
    const read = await client.callTool({ name: 'read_graph', arguments: {} });
    assert.match(JSON.stringify(read.content), /Ada/);
    await client.close();
    const lines = stderr.split('\n').filter((l) => l.includes("recommended policy"));
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0], /3 Read, 3 Write, 0 Execute, 3 Destructive, 0 Financial/);
    assert.ok(existsSync(join(home, 'audit.db')));
  });
});
