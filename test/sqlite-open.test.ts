import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openDatabase } from '../src/state/sqlite.js';
import { ROOT, tempDir } from './helpers/toolgate.js';

/**
 * Two `toolgate run` started together open one new state file at once (CI saw "cannot open the
 * database …: database is locked"): the pragmas that set a new file up need locks SQLite does not
 * always wait for. Opening keeps trying while another process holds the file.
 */
describe('opening a SQLite file another process holds', () => {
  it('waits for a lock held longer than the busy timeout (5 s) instead of failing with "database is locked"', async () => {
    const file = join(tempDir(), 'state.db');
    // Another process creates the file in rollback-journal mode and holds an exclusive lock for 6.5 s.
    const holder = spawn(process.execPath, ['-e', `
      const db = new (require('better-sqlite3'))(${JSON.stringify(file)});
      db.exec('BEGIN EXCLUSIVE; CREATE TABLE held (x)');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 6500);
    `], { cwd: ROOT });
    await new Promise<void>((resolve, reject) => {
      holder.stdout.once('data', () => resolve());
      holder.once('exit', (code) => reject(new Error(`the holder exited (${code})`)));
    });
    const db = openDatabase(file);
    try {
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.deepEqual(db.prepare('SELECT name FROM sqlite_master').all(), [{ name: 'held' }]);
    } finally {
      db.close();
      holder.kill();
    }
  });
});
