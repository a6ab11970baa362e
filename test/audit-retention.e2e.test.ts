import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Database from 'better-sqlite3';
import { AuditLog } from '../src/audit/index.js';
import { until } from './helpers/approvals.js';
import { RecordingUpstream } from './helpers/recording-http.js';
import { serveListening, type Listening } from './helpers/serve.js';
import { BIN, cli, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const serve = (config: string, home: string): Promise<Listening> => serveListening(config, home);
const stop = (s: Listening) => s.stop();

async function connect(base: string): Promise<Client> {
  const client = new Client({ name: 'retention-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/up`)));
  return client;
}

const argsSha = (n: number) => createHash('sha256').update(JSON.stringify({ n })).digest('hex');

describe('audit retention with a gateway running', () => {
  let upstream: RecordingUpstream;
  before(async () => { upstream = await RecordingUpstream.start(); });
  after(async () => { await upstream.stop(); });

  /** A gateway configuration in a new folder, its audit section made from the audit file's path. */
  function configure(audit: (file: string) => unknown): { dir: string; file: string; config: string } {
    const dir = tempDir();
    const file = join(dir, 'audit.db');
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', state: `sqlite:${join(dir, 'state.db')}`, audit: audit(file), servers: { up: { url: upstream.url, policy, auth: 'none' } } }));
    return { dir, file, config };
  }

  it('toolgate audit prune while serve answers calls: every call after the cut keeps its row, no row goes missing, verify passes', async () => {
    const { dir, file, config } = configure((f) => f);
    // Old rows for the prune to work through in many batches.
    const old = new AuditLog(file);
    for (let i = 0; i < 20_000; i++) old.append({ kind: 'call', server: 'up', tool: 'free', decision: 'allow', args: { old: i } });
    old.close();
    const gw = await serve(config, dir);
    const client = await connect(gw.base);
    let cut = '';
    const sentAfterCut: number[] = [];
    let calling = true;
    const calls = (async () => {
      for (let n = 0; calling; n++) {
        const sentAt = new Date().toISOString();
        await client.callTool({ name: 'free', arguments: { n } });
        if (cut !== '' && sentAt > cut) sentAfterCut.push(n);
      }
    })();
    await until(() => upstream.count('free') >= 20 || undefined, 'calls flowing');
    cut = new Date().toISOString();
    const pruned = await cli(['audit', 'prune', '--before', cut, '--audit', file, '--json'], testEnv(dir));
    assert.equal(pruned.code, 0, pruned.stderr);
    const result = JSON.parse(pruned.stdout);
    assert.ok(result.removed >= 20_000, `removed ${result.removed}`);
    const more = upstream.count('free') + 20;
    await until(() => upstream.count('free') >= more || undefined, 'calls still flowing after the prune');
    calling = false;
    await calls;
    await client.close();
    await stop(gw);

    const verified = await cli(['audit', 'verify', '--audit', file, '--json'], testEnv(dir));
    assert.equal(verified.code, 0, verified.stdout);
    const db = new Database(file, { readonly: true });
    const cp = db.prepare<[], { id: number; pruned: number }>('SELECT id, pruned FROM audit_checkpoint').get()!;
    const { rows, last } = db.prepare<[], { rows: number; last: number }>('SELECT count(*) AS rows, max(id) AS last FROM audit').get()!;
    // Ids are handed out one after another: pruned and remaining rows together are every row ever written.
    assert.equal(cp.pruned + rows, last);
    assert.equal(cp.id, cp.pruned);
    const present = new Set(db.prepare<[], { s: string }>("SELECT args_sha256 AS s FROM audit WHERE kind = 'call'").all().map((r) => r.s));
    db.close();
    assert.ok(sentAfterCut.length >= 20);
    for (const n of sentAfterCut) assert.ok(present.has(argsSha(n)), `the row of call ${n}, made after the cut, is kept`);
  });

  it('audit: {retain} in toolgate.yaml: serve prunes in the background and the log still verifies', async () => {
    const { dir, file, config } = configure((f) => ({ path: f, retain: '1s', prune_every: '1s' }));
    const gw = await serve(config, dir);
    const client = await connect(gw.base);
    for (let n = 0; n < 5; n++) await client.callTool({ name: 'free', arguments: { n } });
    // Background prunes run every second and each removes what is older than 1 s by then: wait until
    // they have removed all five calls' rows (under load the first may come before all five are old).
    const removed = () => [...gw.stderr().matchAll(/"removed":(\d+)[^\n]*audit pruned/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    await until(() => removed() >= 5 || undefined, 'background prunes removing the five calls\' rows');
    await client.close();
    await stop(gw);
    const db = new Database(file, { readonly: true });
    const prunes = db.prepare<[], { message: string }>("SELECT message FROM audit WHERE kind = 'prune'").all();
    db.close();
    assert.ok(prunes.length >= 1);
    assert.match(prunes[0].message, /^audit\.retain 1s: removing \d+ rows/);
    const verified = await cli(['audit', 'verify', '--audit', file, '--json'], testEnv(dir));
    assert.equal(verified.code, 0, verified.stdout);
    assert.ok(JSON.parse(verified.stdout).pruned >= 5);
  });

  it('audit export --follow prints rows as the gateway writes them and leaves its cursor at the last one printed', async () => {
    const { dir, file, config } = configure((f) => f);
    const gw = await serve(config, dir);
    const client = await connect(gw.base);
    await client.callTool({ name: 'free', arguments: { n: 1 } });
    await until(() => {
      const log = new AuditLog(file);
      try { return log.query({ kind: 'call' }).length > 0 || undefined; } finally { log.close(); }
    }, 'the first row');
    const tail = spawn(process.execPath, [BIN, 'audit', 'export', '--follow', '--cursor', 'siem', '--audit', file], { env: testEnv(dir) });
    let out = '';
    tail.stdout.on('data', (d) => { out += d; });
    await until(() => out.includes(argsSha(1)) || undefined, 'the row written before');
    await client.callTool({ name: 'free', arguments: { n: 2 } });
    await until(() => out.includes(argsSha(2)) || undefined, 'the row written while following');
    await new Promise((resolve) => { tail.once('exit', resolve); tail.kill('SIGTERM'); });
    await client.close();
    await stop(gw);
    const lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const ids = lines.map((r) => r.id as number);
    assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => i + 1), 'in order, none twice, none missing');
    const list = JSON.parse((await cli(['audit', 'cursors', '--json', '--audit', file], testEnv(dir))).stdout);
    assert.equal(list[0].id, ids.at(-1));
  });
});
