import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { AuditLog } from '../src/audit/index.js';
import { pruneAudit } from '../src/audit/retention.js';
import { parseGatewayConfig } from '../src/config/gateway.js';
import { openDatabase } from '../src/state/sqlite.js';
import { cli, tempDir, testEnv } from './helpers/toolgate.js';

const env = testEnv(tempDir());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Appends `n` calls (with `pad` characters of stored argument values each) and closes the log. */
function fill(file: string, n: number, from = 0, pad = 0): void {
  const log = new AuditLog(file);
  for (let i = from; i < from + n; i++) {
    const ref = log.append({ kind: 'call', server: 's', tool: `t${i}`, decision: i % 3 ? 'allow' : 'deny', args: { i, pad: 'x'.repeat(pad) }, storeArgValues: pad > 0 });
    if (i % 3) log.finish(ref, 'result', 2);
  }
  log.close();
}

/** `n` rows, then a time T, then `m` newer rows: pruning before T removes exactly the first `n`. */
async function twoAges(n: number, m: number, pad = 0): Promise<{ file: string; cut: string }> {
  const file = join(tempDir(), 'audit.db');
  fill(file, n, 0, pad);
  await sleep(5);
  const cut = new Date().toISOString();
  await sleep(5);
  fill(file, m, n, pad);
  return { file, cut };
}

async function prune(file: string, before: string) {
  const log = new AuditLog(file);
  try { return await pruneAudit(log.database, { before, batch: 7, pause: async () => {} }); } finally { log.close(); }
}

function verify(file: string) {
  const log = new AuditLog(file);
  try { return log.verify(); } finally { log.close(); }
}

function sql(file: string, statement: string, ...params: unknown[]): void {
  const db = new Database(file);
  db.prepare(statement).run(...params);
  db.close();
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const FIELDS = ['ts', 'instance', 'kind', 'server', 'grant_label', 'session', 'client', 'tool', 'decision', 'rule', 'message', 'arg_keys', 'args_sha256', 'args', 'policy_hash'];

/**
 * A receiver's check of an export, from its lines alone: each row follows the one before (or the
 * checkpoint line, or `prev` from the export before), hashes to its hash, and its outcome to its
 * seal. Returns the ids in order and the last hash.
 */
function receive(text: string, prev?: string): { ids: number[]; last: string | undefined; checkpoint?: { id: number; hash: string; pruned: number } } {
  const ids: number[] = [];
  let checkpoint;
  for (const line of text.split('\n').filter(Boolean)) {
    const r = JSON.parse(line);
    if (r.checkpoint) {
      assert.equal(ids.length, 0, 'a checkpoint comes first');
      checkpoint = r.checkpoint;
      prev = r.checkpoint.hash;
      continue;
    }
    assert.equal(r.prev_hash, prev ?? '0'.repeat(64), `row ${r.id} follows the row before it`);
    const hash = sha256(r.prev_hash + '\n' + JSON.stringify(FIELDS.map((f) => r[f] ?? null)));
    assert.equal(r.hash, hash, `row ${r.id} hashes to its hash`);
    if (r.outcome !== null) assert.equal(r.outcome_hash, sha256(`${hash}\n${r.outcome}\n${r.latency_ms ?? ''}`));
    ids.push(r.id);
    prev = hash;
  }
  return { ids, last: prev, checkpoint };
}

async function ok(args: string[]): Promise<string> {
  const r = await cli(args, env);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

describe('audit retention: prune', () => {
  it('removes the rows before the time, adds its own row to the chain, and the rest verifies from the checkpoint', async () => {
    const { file, cut } = await twoAges(30, 10);
    const r = await prune(file, cut);
    assert.equal(r.removed, 30);
    assert.deepEqual({ id: r.checkpoint!.id, pruned: r.checkpoint!.pruned }, { id: 30, pruned: 30 });
    const result = verify(file);
    assert.deepEqual(result, { ok: true, rows: 11, pruned: 30 });
    const log = new AuditLog(file);
    const last = log.query({ limit: 1 })[0];
    assert.equal(last.kind, 'prune');
    assert.match(last.rule!, /^through:30:[0-9a-f]{64}$/);
    assert.equal(log.query({}).at(0)!.tool, 't30');
    log.close();
    // A second prune carries on from the first checkpoint, and the total counts both.
    const again = await prune(file, new Date(Date.now() + 1000).toISOString());
    assert.equal(again.checkpoint!.pruned, 30 + 11);
    assert.deepEqual(verify(file), { ok: true, rows: 1, pruned: 41 });
    // Through the CLI too, with the same result in JSON.
    const { file: other, cut: otherCut } = await twoAges(5, 2);
    const out = JSON.parse(await ok(['audit', 'prune', '--before', otherCut, '--audit', other, '--json']));
    assert.equal(out.removed, 5);
    assert.equal(JSON.parse(await ok(['audit', 'verify', '--audit', other, '--json'])).ok, true);
  });

  it('after a prune, an edited or deleted row, a deleted checkpoint, a deleted row just after it, or a checkpoint moved further are found', async () => {
    const { file, cut } = await twoAges(20, 10);
    await prune(file, cut);
    assert.equal(verify(file).ok, true);
    const cases: [string, (f: string) => void, RegExp][] = [
      ['an edited row', (f) => sql(f, "UPDATE audit SET decision = 'allow' WHERE id = 25"), /row 25 was edited/],
      ['a deleted row', (f) => sql(f, 'DELETE FROM audit WHERE id = 25'), /row 26 does not follow/],
      ['the deleted checkpoint', (f) => sql(f, 'DELETE FROM audit_checkpoint'), /row 21 does not follow the start of the log/],
      ['the row just after the checkpoint deleted', (f) => sql(f, 'DELETE FROM audit WHERE id = 21'), /row 22 does not follow the checkpoint/],
      ['a checkpoint moved past what the prune allowed', (f) => {
        const db = new Database(f);
        const row = db.prepare<[], { hash: string }>('SELECT hash FROM audit WHERE id = 24').get()!;
        db.prepare('DELETE FROM audit WHERE id <= 24').run();
        db.prepare('UPDATE audit_checkpoint SET id = 24, hash = ?, pruned = pruned + 4').run(row.hash);
        db.close();
      }, /checkpoint \(row 24\) is not one a prune in the log allowed/],
      ['the checkpoint with the prune row deleted', (f) => sql(f, "DELETE FROM audit WHERE kind = 'prune'"), /not one a prune in the log allowed/],
    ];
    for (const [what, tamper, problem] of cases) {
      const copy = join(tempDir(), 'audit.db');
      copyFileSync(file, copy);
      tamper(copy);
      const r = verify(copy);
      assert.equal(r.ok, false, what);
      assert.match(r.problem!, problem, what);
      const out = await cli(['audit', 'verify', '--audit', copy], env);
      assert.equal(out.code, 1, what);
    }
  });

  it('never removes rows an export cursor (named or a file) has not passed', async () => {
    const { file } = await twoAges(10, 0);
    // The SIEM exported the 10 rows so far.
    await ok(['audit', 'export', '--audit', file, '--cursor', 'siem']);
    const cursorFile = join(tempDir(), 'siem.json');
    assert.equal((await cli(['audit', 'export', '--audit', file, '--after', '4', '--cursor', cursorFile], env)).code, 2, '--after or --cursor, not both');
    fill(file, 10, 10);
    await ok(['audit', 'export', '--audit', file, '--cursor', cursorFile]);
    assert.deepEqual(JSON.parse(readFileSync(cursorFile, 'utf8')), { id: 20 });
    const out = await ok(['audit', 'prune', '--before', '1s', '--audit', file]);
    assert.match(out, /pruned 10 rows/);
    assert.match(out, /held back by export cursor "siem" at row 10/);
    const list = JSON.parse(await ok(['audit', 'cursors', '--audit', file, '--json']));
    assert.deepEqual(list.map((c: { name: string; id: number }) => [c.name, c.id]), [[`file:${cursorFile}`, 20], ['siem', 10]]);
    assert.equal(verify(file).ok, true);
    // Dropping the slow cursor lets the next prune reach the file cursor (not the prune row after it).
    await ok(['audit', 'cursors', '--delete', 'siem', '--audit', file]);
    const next = JSON.parse(await ok(['audit', 'prune', '--before', new Date(Date.now() + 60_000).toISOString(), '--audit', file, '--json']));
    assert.equal(next.checkpoint.id, 20);
    assert.equal(next.heldBy.name, `file:${cursorFile}`);
    assert.equal(verify(file).ok, true);
  });

  it('gives the space back: a new file shrinks; an older file shrinks after one prune --vacuum', async () => {
    const { file, cut } = await twoAges(3000, 10, 1000);
    const before = statSync(file).size;
    await prune(file, cut);
    const after = statSync(file).size;
    assert.ok(after < before / 4, `${before} → ${after} bytes`);
    assert.equal(verify(file).ok, true);

    // A file made before retention existed (auto_vacuum off): freed pages are reused, the file
    // keeps its size, and one prune --vacuum converts and shrinks it.
    const old = join(tempDir(), 'audit.db');
    openDatabase(old).close();
    fill(old, 2000, 0, 1000);
    const size = statSync(old).size;
    const plain = await ok(['audit', 'prune', '--before', '1d', '--audit', old]);
    assert.match(plain, /pruned 0 rows/);
    assert.match(plain, /does not give freed space back .* --vacuum/);
    await ok(['audit', 'prune', '--before', new Date(Date.now() + 60_000).toISOString(), '--vacuum', '--audit', old]);
    assert.ok(statSync(old).size < size / 4, `${size} → ${statSync(old).size} bytes`);
    assert.equal(verify(old).ok, true);
    assert.ok(!existsSync(`${old}-wal`) || statSync(`${old}-wal`).size === 0);
  });

  it('--before takes an ISO time or a duration ago; anything else is one line, exit 2', async () => {
    const { file } = await twoAges(1, 0);
    const r = await cli(['audit', 'prune', '--before', 'yesterday', '--audit', file], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /invalid --before "yesterday"/);
  });
});

describe('audit export', () => {
  it('prints every row in order with its hashes; a receiver verifies continuity from the lines alone', async () => {
    const { file } = await twoAges(25, 0);
    const got = receive(await ok(['audit', 'export', '--format', 'jsonl', '--audit', file]));
    assert.deepEqual(got.ids, Array.from({ length: 25 }, (_, i) => i + 1));
    // A row edited in the file no longer checks out at the receiver.
    sql(file, "UPDATE audit SET tool = 'other' WHERE id = 7");
    const edited = await ok(['audit', 'export', '--audit', file]);
    assert.throws(() => receive(edited), /row 7 hashes to its hash/);
  });

  it('resumes after a cursor (name or file) or --after with no row twice and none missing', async () => {
    const { file } = await twoAges(12, 0);
    const first = receive(await ok(['audit', 'export', '--audit', file, '--cursor', 'siem']));
    assert.deepEqual(first.ids, Array.from({ length: 12 }, (_, i) => i + 1));
    assert.equal(receive(await ok(['audit', 'export', '--audit', file, '--cursor', 'siem'])).ids.length, 0, 'nothing new, nothing printed');
    fill(file, 8, 12);
    const second = receive(await ok(['audit', 'export', '--audit', file, '--cursor', 'siem']), first.last);
    assert.deepEqual(second.ids, Array.from({ length: 8 }, (_, i) => i + 13));

    const cursor = join(tempDir(), 'cursor.json');
    const a = receive(await ok(['audit', 'export', '--audit', file, '--cursor', cursor]));
    fill(file, 3, 20);
    const b = receive(await ok(['audit', 'export', '--audit', file, '--cursor', cursor]), a.last);
    assert.deepEqual([...a.ids, ...b.ids], Array.from({ length: 23 }, (_, i) => i + 1));

    const all = (await ok(['audit', 'export', '--audit', file])).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const after = receive(await ok(['audit', 'export', '--audit', file, '--after', '20']), all[19].hash);
    assert.deepEqual(after.ids, [21, 22, 23]);
  });

  it('across a prune, starts with the checkpoint line, and the rows follow it', async () => {
    const { file, cut } = await twoAges(15, 5);
    await prune(file, cut);
    const got = receive(await ok(['audit', 'export', '--audit', file]));
    assert.deepEqual({ id: got.checkpoint!.id, pruned: got.checkpoint!.pruned }, { id: 15, pruned: 15 });
    assert.deepEqual(got.ids, [16, 17, 18, 19, 20, 21]);
    // --after a row that was pruned: the checkpoint, then the rest, and a warning that rows were missed.
    const r = await cli(['audit', 'export', '--audit', file, '--after', '3'], env);
    assert.equal(r.code, 0);
    assert.deepEqual(receive(r.stdout).ids, [16, 17, 18, 19, 20, 21]);
    assert.match(r.stderr, /rows after 3 up to 15 were pruned/);
  });

  it('a cursor file whose registration was deleted, then passed by a prune, says what its receiver missed', async () => {
    const { file, cut } = await twoAges(6, 4);
    const cursor = join(tempDir(), 'siem.json');
    assert.equal(receive(await ok(['audit', 'export', '--audit', file, '--cursor', cursor])).ids.length, 10);
    writeFileSync(cursor, JSON.stringify({ id: 3 })); // the receiver lost rows 4-10, say, and rewound
    await ok(['audit', 'cursors', '--delete', cursor, '--audit', file]);
    await prune(file, cut);
    const r = await cli(['audit', 'export', '--audit', file, '--cursor', cursor], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /rows after 3 up to 6 were pruned/);
    const got = receive(r.stdout);
    assert.equal(got.checkpoint!.id, 6);
    assert.deepEqual(got.ids, [7, 8, 9, 10, 11]);
    assert.deepEqual(JSON.parse(readFileSync(cursor, 'utf8')), { id: 11 });
  });
});

describe('audit configuration', () => {
  it('audit is a path (as before) or {path, retain, prune_every}', () => {
    const base = 'servers: {}\n';
    const plain = parseGatewayConfig(`${base}audit: logs/audit.db\n`, '/srv');
    assert.ok(plain.ok);
    assert.deepEqual(plain.value.audit, { path: '/srv/logs/audit.db', retain: undefined, prune_every: '1h' });
    const kept = parseGatewayConfig(`${base}audit: {path: a.db, retain: 90d}\n`, '/srv');
    assert.ok(kept.ok);
    assert.deepEqual(kept.value.audit, { path: '/srv/a.db', retain: '90d', prune_every: '1h' });
    const bad = parseGatewayConfig(`${base}audit: {retain: forever}\n`, '/srv');
    assert.ok(!bad.ok);
    assert.deepEqual(bad.issues.map((i) => i.pointer), ['/audit/retain']);
    const neither = parseGatewayConfig(`${base}audit: 5\n`, '/srv');
    assert.ok(!neither.ok);
    assert.match(neither.issues[0].message, /audit is a file path, or \{path, retain/);
  });
});
