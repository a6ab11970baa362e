// Memory of an idle gateway session, without its upstream process: sessions on an HTTP upstream
// (the conformance fixture), measured in-process after a full GC. Run with --expose-gc.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { fmt } from './stats.js';

const ROOT = resolve(import.meta.dirname, '..');

export async function benchSessions(count = 300): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) { console.log('\nsession memory: skipped (run node with --expose-gc)'); return NaN; }
  const fixture = spawn(process.execPath, [join(ROOT, 'test/fixtures/conformance-server.mjs'), '--http', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await new Promise<number>((r) => fixture.stdout.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) r(Number(m[1])); }));
  const dir = mkdtempSync(join(tmpdir(), 'tg-sessions-'));
  const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers: { up: { url: `http://127.0.0.1:${port}/mcp`, auth: 'none', policy: join(ROOT, 'docs/examples/everything.policy.json') } } });
  const gateway = new Gateway({ config, state: openMemoryState(), audit: new AuditLog(join(dir, 'audit.db')), log: pino({ level: 'silent' }) });
  const { port: gw } = await gateway.start();
  const url = `http://127.0.0.1:${gw}/mcp/up`;
  const open = async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'm', version: '1' } } }) });
    await res.text();
    const sid = res.headers.get('mcp-session-id')!;
    await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  };
  try {
    for (let i = 0; i < 20; i++) await open(); // warm up code paths
    await new Promise((r) => setTimeout(r, 200));
    gc(); gc();
    const before = process.memoryUsage();
    for (let i = 0; i < count; i++) await open();
    await new Promise((r) => setTimeout(r, 500));
    gc(); gc();
    const after = process.memoryUsage();
    const perSession = (after.heapUsed + after.external - before.heapUsed - before.external) / count;
    console.log(`\nidle gateway session memory (heap + external, after GC, ${count} sessions on an HTTP upstream): ${fmt(perSession / 1024, 1)} KB per session (target < 100 KB)`);
    return perSession;
  } finally {
    await gateway.stop();
    fixture.kill();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSessions();
