import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { AuditLog, maskSecrets } from '../src/audit/index.js';
import { tempDir } from './helpers/toolgate.js';

function filled(n = 5): { file: string; log: AuditLog } {
  const file = join(tempDir(), 'audit.db');
  const log = new AuditLog(file);
  for (let i = 0; i < n; i++) {
    const ref = log.append({ kind: 'call', server: 's', grant: 'g', session: 'x', client: 'c', tool: `t${i}`, decision: i % 2 ? 'deny' : 'allow', rule: '(default)', argKeys: ['a'], argsSha256: 'f'.repeat(64), policyHash: 'p' });
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
    for (let i = 0; i < 20; i++) (i % 2 ? a : b).append({ kind: 'call', tool: String(i) });
    assert.deepEqual(a.verify(), { ok: true, rows: 20 });
  });

  it('masks secret-looking fields, deeply', () => {
    assert.deepEqual(
      maskSecrets({ path: '/x', api_key: 'k', nested: { Password: 'p', list: [{ token: 't', name: 'n' }] }, authorization: 'Bearer x', keyboard: 'qwerty' }),
      { path: '/x', api_key: '***', nested: { Password: '***', list: [{ token: '***', name: 'n' }] }, authorization: '***', keyboard: 'qwerty' },
    );
  });
});
