import assert from 'node:assert/strict';
import fs, { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { AuditLog, maskSecrets } from '../src/audit/index.js';
import { collectJournals, JOURNAL_MAX_BYTES, journalDirs, JournalLines, journalPrefix, outcomeLine } from '../src/audit/journal.js';
import { FIXTURES, ROOT, tempDir } from './helpers/toolgate.js';

const exec = promisify(execFile);

function filled(n = 5): { file: string; log: AuditLog } {
  const file = join(tempDir(), 'audit.db');
  const log = new AuditLog(file);
  for (let i = 0; i < n; i++) {
    const ref = log.append({ kind: 'call', server: 's', grant: 'g', session: 'x', client: 'c', tool: `t${i}`, decision: i % 2 ? 'deny' : 'allow', rule: '(default)', args: { a: i }, policyHash: 'p' });
    if (i % 2 === 0) log.finish(ref, 'result', 1.5);
  }
  return { file, log };
}

describe('audit log', () => {
  it('appends rows with every field and queries them by filter', () => {
    const { log } = filled();
    const rows = log.query({});
    assert.equal(rows.length, 5);
    assert.deepEqual(rows.map((r) => r.tool), ['t0', 't1', 't2', 't3', 't4']);
    assert.equal(rows[0].outcome, 'result');
    assert.equal(rows[0].latency_ms, 1.5);
    assert.equal(rows[1].outcome, null);
    assert.deepEqual(log.query({ decision: 'deny' }).map((r) => r.tool), ['t1', 't3']);
    assert.deepEqual(log.query({ tool: 't2' }).map((r) => r.id), [3]);
    assert.equal(log.query({ sinceMs: 60_000 }).length, 5);
    assert.equal(log.query({ limit: 2 }).map((r) => r.tool).join(), 't3,t4');
    assert.deepEqual(log.verify(), { ok: true, rows: 5 });
  });

  it('an outcome that arrives after its row was written is sealed onto that row', () => {
    const { log } = filled(2);
    const late = log.append({ kind: 'call', tool: 'late', decision: 'allow' });
    log.flush();
    log.finish(late, 'is_error', 7.25);
    const row = log.query({ tool: 'late' })[0];
    assert.equal(row.outcome, 'is_error');
    assert.equal(row.latency_ms, 7.25);
    assert.deepEqual(log.verify(), { ok: true, rows: 3 });
  });

  for (const [what, sql, problem] of [
    ['an edited row', "UPDATE audit SET decision = 'allow' WHERE id = 2", /row 2 was edited/],
    ['a deleted row', 'DELETE FROM audit WHERE id = 3', /row 4 does not follow/],
    ['deleted last rows', 'DELETE FROM audit WHERE id >= 4', /rows after 3 were deleted/],
    ['an edited outcome', "UPDATE audit SET outcome = 'error' WHERE id = 1", /outcome of row 1 was edited/],
  ] as const) {
    it(`verify detects ${what}`, () => {
      const { file, log } = filled();
      log.close();
      const db = new Database(file);
      db.exec(sql);
      db.close();
      const again = new AuditLog(file);
      const r = again.verify();
      assert.equal(r.ok, false);
      assert.match(r.problem!, problem);
    });
  }

  it('two writers on one file keep one unbroken chain', () => {
    const file = join(tempDir(), 'audit.db');
    const a = new AuditLog(file);
    const b = new AuditLog(file);
    for (let i = 0; i < 20; i++) {
      (i % 2 ? a : b).append({ kind: 'call', tool: String(i) });
      if (i % 3 === 0) (i % 2 ? a : b).flush();
    }
    b.flush();
    assert.deepEqual(a.verify(), { ok: true, rows: 20 });
  });

  it('masks secret-looking fields, deeply', () => {
    assert.deepEqual(
      maskSecrets({ path: '/x', api_key: 'k', nested: { Password: 'p', list: [{ token: 't', name: 'n' }] }, authorization: 'Bearer x', keyboard: 'qwerty' }),
      { path: '/x', api_key: '***', nested: { Password: '***', list: [{ token: '***', name: 'n' }] }, authorization: '***', keyboard: 'qwerty' },
    );
  });
});

describe('audit journal', () => {
  it('an event is durable before its batch is written, and replayed by the next open', async () => {
    const { spawnSync } = await import('node:child_process');
    const file = join(tempDir(), 'audit.db');
    // A child process appends one event and is SIGKILLed before its batch timer fires.
    const script = `import { AuditLog } from ${JSON.stringify(new URL('../src/audit/log.ts', import.meta.url).pathname)};
      const log = new AuditLog(${JSON.stringify(file)});
      log.append({ kind: 'call', tool: 'survivor', decision: 'allow', args: { a: 1 } });
      process.kill(process.pid, 'SIGKILL');`;
    spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url).pathname });
    const log = new AuditLog(file);
    const rows = log.query({});
    assert.deepEqual(rows.map((r) => [r.tool, r.decision, r.arg_keys]), [['survivor', 'allow', '["a"]']]);
    assert.equal(rows[0].args_sha256, null, 'hashes are computed at batch time; a replayed row has keys only');
    assert.ok(log.verify().ok);
  });

  it('with a writer thread: batches are written beside the event loop, flush waits for them, the chain holds', () => {
    const file = join(tempDir(), 'audit.db');
    const log = new AuditLog(file, { background: true });
    for (let i = 0; i < 600; i++) {
      const ref = log.append({ kind: 'call', tool: `t${i}`, decision: 'allow', args: { i } });
      if (i % 3 === 0) log.finish(ref, 'result', i);
      if (i === 300) log.flush();
    }
    const rows = log.query({ limit: 10_000 });
    assert.equal(rows.length, 600);
    assert.deepEqual(rows.slice(0, 3).map((r) => r.tool), ['t0', 't1', 't2']);
    assert.equal(rows[3].outcome, 'result');
    assert.match(rows[5].args_sha256!, /^[0-9a-f]{64}$/);
    assert.deepEqual(log.verify(), { ok: true, rows: 600 });
    log.close();
    assert.deepEqual(new AuditLog(file).verify(), { ok: true, rows: 600 });
  });

  it('stores masked argument values only when asked', () => {
    const log = new AuditLog(join(tempDir(), 'audit.db'));
    log.append({ kind: 'call', tool: 'a', args: { path: '/x', token: 'abc' } });
    log.append({ kind: 'call', tool: 'b', args: { path: '/x', token: 'abc' }, storeArgValues: true });
    const [a, b] = log.query({});
    assert.equal(a.args, null);
    assert.equal(b.args, '{"path":"/x","token":"***"}');
    assert.equal(a.args_sha256, b.args_sha256);
    assert.match(a.args_sha256!, /^[0-9a-f]{64}$/);
  });
});

/** Runs `body` (with `log`, an AuditLog on `file`) in a child process that then dies by SIGKILL. */
async function killedChild(file: string, body: string, options: { background?: boolean } = {}): Promise<void> {
  const { spawnSync } = await import('node:child_process');
  const script = `import { AuditLog } from ${JSON.stringify(new URL('../src/audit/log.ts', import.meta.url).pathname)};
    const log = new AuditLog(${JSON.stringify(file)}, ${JSON.stringify(options)});
    ${body}
    process.kill(process.pid, 'SIGKILL');`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: new URL('..', import.meta.url).pathname });
  assert.equal(r.signal, 'SIGKILL', r.stderr.toString());
}

describe('audit hardening (issue 9)', () => {
  it('9. rows with no outcome to come (denials) are not remembered; outcomes still awaited stay bounded', () => {
    const file = join(tempDir(), 'audit.db');
    const log = new AuditLog(file);
    for (let i = 0; i < 20_000; i++) log.append({ kind: 'call', tool: 't', decision: 'deny', rule: '(default)' });
    log.flush();
    assert.equal(log.awaitingOutcomes, 0);
    const refs = [];
    for (let i = 0; i < 10_000; i++) refs.push(log.append({ kind: 'call', tool: `f${i}`, decision: 'allow', awaitsOutcome: true }));
    log.flush();
    assert.ok(log.awaitingOutcomes <= 4096, `${log.awaitingOutcomes} outcomes remembered`);
    for (const ref of refs) log.finish(ref, 'result', 2);
    log.flush();
    assert.equal(log.awaitingOutcomes, 0);
    const rows = log.query({ decision: 'allow', limit: 20_000 });
    assert.ok(rows.every((r) => r.outcome === 'result' && r.latency_ms === 2), 'outcomes of forgotten hashes are sealed from the database');
    assert.deepEqual(log.verify(), { ok: true, rows: 30_000 });
    log.close();
  });

  it('with the writer thread (toolgate serve), kill -9 loses no row: neither those sent to the thread nor those still waiting', async () => {
    const file = join(tempDir(), 'audit.db');
    await killedChild(file, `
      for (let i = 0; i < 300; i++) log.finish(log.append({ kind: 'call', tool: 'sent' + i, decision: 'allow', args: { i }, awaitsOutcome: true }), 'result', i);
      await new Promise((r) => setTimeout(r, 60)); // the batch timer (50 ms) hands these to the thread
      for (let i = 0; i < 5; i++) log.finish(log.append({ kind: 'call', tool: 'waiting' + i, decision: 'allow', awaitsOutcome: true }), 'is_error', i);
      await new Promise((r) => setImmediate(r)); // the last outcome's line goes at the end of its turn`, { background: true });
    const log = new AuditLog(file);
    const rows = log.query({ limit: 1000 });
    assert.equal(rows.length, 305);
    assert.ok(rows.every((r) => r.outcome !== null), 'every outcome is kept too');
    assert.deepEqual(rows.slice(-5).map((r) => r.tool), ['waiting0', 'waiting1', 'waiting2', 'waiting3', 'waiting4']);
    assert.ok(log.verify().ok);
    log.close();
  });

  it('12. an outcome survives kill -9 once the next journal write or the end of its turn came', async () => {
    const file = join(tempDir(), 'audit.db');
    await killedChild(file, `
      const ref = log.append({ kind: 'call', tool: 'done', decision: 'allow', awaitsOutcome: true });
      log.flush();
      log.finish(ref, 'result', 12.5);
      const same = log.append({ kind: 'call', tool: 'same-batch', decision: 'allow', awaitsOutcome: true });
      log.finish(same, 'is_error', 3);
      await new Promise((resolve) => setImmediate(resolve));
      const late = log.append({ kind: 'call', tool: 'no-turn-end', decision: 'allow', awaitsOutcome: true });
      log.finish(late, 'result', 1);`);
    const log = new AuditLog(file);
    // done's outcome rode with same-batch's row, same-batch's went at the end of the turn; the
    // last was killed in the turn of its answer, so its row stands without an outcome.
    assert.deepEqual(log.query({}).map((r) => [r.tool, r.outcome, r.latency_ms]), [['done', 'result', 12.5], ['same-batch', 'is_error', 3], ['no-turn-end', null, null]]);
    assert.ok(log.verify().ok);
    log.close();
  });

  it('12. outcomes cost no journal write of their own while calls keep coming: they ride with the next row', () => {
    const file = join(tempDir(), 'audit.db');
    const log = new AuditLog(file);
    const dir = journalDirs(file)[0];
    const journal = () => readdirSync(dir).filter((n) => n.startsWith(journalPrefix(file))).map((n) => readFileSync(join(dir, n), 'utf8')).join('');
    const a = log.append({ kind: 'call', tool: 'a', decision: 'allow', awaitsOutcome: true });
    log.finish(a, 'result', 1);
    assert.doesNotMatch(journal(), /"o":/, 'not written on its own');
    log.append({ kind: 'call', tool: 'b', decision: 'allow' });
    assert.match(journal(), new RegExp(`\\{"o":"${a.eventId}","r":"result","l":1\\}\\n\\[`), 'written with the next row, before it');
    log.close();
  });

  it('12. a burst of outcomes in one turn carries no journal far past its size', async () => {
    const file = join(tempDir(), 'audit.db');
    const log = new AuditLog(file);
    // Every journal write, by file descriptor (the named import follows the patched export).
    const written: number[] = [];
    const open = new Map<number, number>();
    const [original, originalOpen] = [fs.writeSync, fs.openSync];
    fs.openSync = ((...a: Parameters<typeof fs.openSync>) => {
      const fd = originalOpen(...a);
      open.set(fd, written.push(0) - 1);
      return fd;
    }) as typeof fs.openSync;
    fs.writeSync = ((fd: number, data: string) => {
      const n = original(fd, data);
      const i = open.get(fd);
      if (i !== undefined) written[i] += n;
      return n;
    }) as typeof fs.writeSync;
    syncBuiltinESMExports();
    try {
      // Calls in flight fill the first journal to just under its size, then all end in one turn (an upstream closes).
      const refs = [];
      while (written.length === 0 || written[0] < JOURNAL_MAX_BYTES - 4096) refs.push(log.append({ kind: 'call', tool: `t${refs.length}`, decision: 'allow', message: 'm'.repeat(400), awaitsOutcome: true }));
      for (const ref of refs) log.finish(ref, 'unanswered', null);
      await new Promise((r) => setImmediate(r));
    } finally {
      [fs.writeSync, fs.openSync] = [original, originalOpen];
      syncBuiltinESMExports();
    }
    assert.ok(written.length > 1, 'the journal was rotated');
    const largest = Math.max(...written);
    assert.ok(largest <= JOURNAL_MAX_BYTES + 16 * 1024 + 1024, `a journal took ${largest} bytes`);
    assert.ok(log.query({ limit: 5000 }).every((r) => r.outcome === 'unanswered'), 'every outcome reached the database');
    assert.ok(log.verify().ok);
    log.close();
  });

  it('13. any toolgate that starts replays a dead process\'s journal into its own database', async () => {
    const { spawnSync } = await import('node:child_process');
    const file = join(tempDir(), 'audit.db');
    await killedChild(file, "log.flush(); log.append({ kind: 'call', tool: 'orphan', decision: 'allow' });");
    const before = new Database(file, { readonly: true });
    assert.deepEqual(before.prepare('SELECT count(*) AS n FROM audit').get(), { n: 0 });
    before.close();
    // Another toolgate, on another database, for an unrelated command.
    const r = spawnSync(process.execPath, [new URL('../bin/toolgate.js', import.meta.url).pathname, 'policy', 'validate', '--help'], { env: { ...process.env, TOOLGATE_HOME: tempDir() } });
    assert.equal(r.status, 0, r.stderr.toString());
    const after = new Database(file, { readonly: true });
    assert.deepEqual(after.prepare('SELECT tool FROM audit').all(), [{ tool: 'orphan' }]);
    after.close();
    assert.deepEqual(readdirSync(journalDirs(file)[0]).filter((n) => n.startsWith(journalPrefix(file))), []);
  });

  it('13. a dead journal whose database is gone is kept for a day, then removed', async () => {
    const { spawnSync } = await import('node:child_process');
    const dir = tempDir();
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    const gone = join(tempDir(), 'gone', 'audit.db');
    const journal = (seq: number) => join(dir, `${journalPrefix(gone)}${dead}-abcd1234-${seq}`);
    for (const seq of [0, 1]) writeFileSync(journal(seq), `{"db":${JSON.stringify(gone)}}\n["e${seq}","2026-01-01T00:00:00Z","h:1","call",null,null,null,null,"x","allow",null,null,null,null]\n`);
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000);
    utimesSync(journal(0), twoDaysAgo, twoDaysAgo);
    collectJournals([dir]);
    assert.deepEqual(readdirSync(dir), [basename(journal(1))]);
  });

  it('13. a journal is capped: a full one is written to the database at once; huge fields are cut', () => {
    const file = join(tempDir(), 'audit.db');
    const log = new AuditLog(file);
    const own = () => readdirSync(journalDirs(file)[0]).filter((n) => n.startsWith(journalPrefix(file))).map((n) => statSync(join(journalDirs(file)[0], n)).size);
    let largest = 0;
    for (let i = 0; i < 2000; i++) {
      log.append({ kind: 'call', tool: `${'x'.repeat(100_000)}${i}`, decision: 'deny', message: 'm'.repeat(2000) });
      largest = Math.max(largest, ...own());
    }
    assert.ok(largest < JOURNAL_MAX_BYTES + 16 * 1024, `a journal grew to ${largest} bytes`);
    const rows = log.query({ limit: 5000 });
    assert.equal(rows.length, 2000);
    assert.match(rows[0].tool!, /^x{4096}… \[95905 more characters\]$/);
    log.close();
  });
});

describe('audit journal on a full disk', () => {
  it('a journal write cut short refuses its call, and every call accepted survives kill -9 (ulimit -f 512)', async () => {
    const file = join(tempDir(), 'audit.db');
    // SIGXFSZ ignored: a write past the limit is cut short, then fails with EFBIG.
    const { stdout } = await exec('bash', ['-c', `trap '' XFSZ; ulimit -f 512; exec "${process.execPath}" ${join(FIXTURES, 'journal-fill.mjs')}`], {
      env: { ...process.env, AUDIT_MODULE: pathToFileURL(join(ROOT, 'src/audit/index.ts')).href, AUDIT_FILE: file, NODE_OPTIONS: '--import tsx' },
    }).catch((err: { stdout: string }) => err);
    const { accepted, refused } = JSON.parse(stdout) as { accepted: number; refused: string[] };
    assert.ok(refused.length > 0, 'the limit was reached');
    assert.match(refused[0], /^the journal took \d+ of \d+ bytes \(is the disk full\?\)$/);
    const log = new AuditLog(file);
    assert.equal(log.query({ limit: 5000 }).length, accepted, 'each accepted call has its row; no refused one has');
    assert.ok(accepted > 1000, `${accepted}: a cut journal gives way to a new one, the process keeps recording`);
    log.close();
  });

  it('a cut first line of a new journal ends that journal too: the calls after it are recorded (ulimit -f 512)', async () => {
    const file = join(tempDir(), 'audit.db');
    const { stdout } = await exec('bash', ['-c', `trap '' XFSZ; ulimit -f 512; exec "${process.execPath}" ${join(FIXTURES, 'journal-fill.mjs')}`], {
      env: { ...process.env, AUDIT_MODULE: pathToFileURL(join(ROOT, 'src/audit/index.ts')).href, AUDIT_FILE: file, HUGE_FIRST: '1', NODE_OPTIONS: '--import tsx' },
    }).catch((err: { stdout: string }) => err);
    const { accepted, refused, first } = JSON.parse(stdout) as { accepted: number; refused: string[]; first: string };
    assert.match(first, /^the journal took \d+ of \d+ bytes/, 'the oversized first event was refused');
    assert.ok(accepted > 1000, `${accepted} accepted, ${refused.length} refused after it: ${refused[0]}`);
    const log = new AuditLog(file);
    assert.equal(log.query({ limit: 5000 }).length, accepted);
    log.close();
  });
});

describe('audit database', () => {
  it('a new one has 4 KiB pages (rows come in batches); an existing one keeps its own', () => {
    const dir = tempDir();
    const fresh = new AuditLog(join(dir, 'new.db'));
    fresh.append({ kind: 'start', message: 'x' });
    fresh.close();
    const old = new Database(join(dir, 'old.db'));
    old.pragma('page_size = 1024');
    old.exec('CREATE TABLE t (x)');
    old.close();
    const existing = new AuditLog(join(dir, 'old.db'));
    existing.append({ kind: 'start', message: 'x' });
    assert.ok(existing.verify().ok);
    existing.close();
    const pages = (f: string) => { const db = new Database(join(dir, f)); try { return db.pragma('page_size', { simple: true }); } finally { db.close(); } };
    assert.equal(pages('new.db'), 4096);
    assert.equal(pages('old.db'), 1024);
  });
});

describe('journal lines', () => {
  it('are the JSON of their entry, also when the repeated part changes or needs escaping', () => {
    const lines = new JournalLines();
    const base = ['1a-0badcafe-0', '2026-12-01T02:00:00.000Z', 'host:1', 'call', 'srv', 'ci', 's1', 'claude', 'echo', 'allow', '/tools/echo', null, '["message"]', 'h'];
    const entries = [
      base,
      [...base.slice(0, 8), 'wri"te\n', 'deny', '/tools/x', 'Tool "x\u2028" is blocked.', null, null],
      [...base.slice(0, 6), 'other session', 'cli\\ent', ...base.slice(8)],
      [...base.slice(0, 4), null, null, null, null, null, null, null, 'policy reloaded', null, 'h2'],
      base,
    ];
    for (const e of entries) assert.equal(lines.line(e), JSON.stringify(e) + '\n');
  });

  it('timestamps read like toISOString, across seconds', () => {
    const lines = new JournalLines();
    for (const ms of [Date.UTC(2026, 11, 1, 2, 3, 4, 5), Date.UTC(2026, 11, 1, 2, 3, 4, 56), Date.UTC(2026, 11, 1, 2, 3, 4, 999), Date.UTC(2026, 11, 1, 2, 3, 5, 0), Date.UTC(2026, 11, 1, 2, 3, 4, 120)]) {
      assert.equal(lines.timestamp(ms), new Date(ms).toISOString());
    }
  });

  it('outcome lines are the JSON of their outcome', () => {
    for (const o of [{ eventId: 'a-b-1', outcome: 'result', latency: 1.25 }, { eventId: 'a-b-2', outcome: 'is_error', latency: null }]) {
      assert.equal(outcomeLine(o), JSON.stringify({ o: o.eventId, r: o.outcome, l: o.latency }) + '\n');
    }
  });
});
