import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Grants } from '../src/grants/grants.js';
import { openMemoryState } from '../src/state/memory.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { tempDir } from './helpers/toolgate.js';

describe('multi-server grants (issue 27)', () => {
  it('a grant opens every server it names and no other; a one-server grant as before', async () => {
    const grants = new Grants(openMemoryState().grants);
    const multi = await grants.create({ server: 'files', servers: ['web', 'files', 'chat'], label: 'bot' });
    assert.deepEqual(multi.grant.servers, ['files', 'web', 'chat'], 'the first server first, each once');
    for (const s of ['files', 'web', 'chat']) assert.equal((await grants.authenticate(multi.token, s)).ok, true, s);
    const other = await grants.authenticate(multi.token, 'github');
    assert.equal(other.ok, false);
    assert.match(!other.ok ? other.reason : '', /the grant is for servers "files", "web", "chat", not this one/);
    const one = await grants.create({ server: 'files', label: 'one' });
    assert.equal(one.grant.servers, undefined);
    assert.equal((await grants.authenticate(one.token, 'web')).ok, false);
    assert.equal((await grants.find('bot', 'chat')).id, multi.grant.id, 'found by label on any of its servers');
  });

  it('a state.db made before multi-server grants gains the column and keeps its grants', async () => {
    const file = join(tempDir(), 'state.db');
    const db = new Database(file);
    db.exec(`CREATE TABLE grants (id TEXT PRIMARY KEY, label TEXT NOT NULL, server TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, tags TEXT NOT NULL,
      policy TEXT, created_at TEXT NOT NULL, expires_at TEXT, revoked_at TEXT)`);
    db.prepare("INSERT INTO grants VALUES ('gr_old', 'old', 'files', 'h-old', '[]', NULL, '2026-01-01T00:00:00.000Z', NULL, NULL)").run();
    db.close();
    const state = openSqliteState(file);
    assert.deepEqual(await state.grants.byTokenHash('h-old'), { id: 'gr_old', label: 'old', server: 'files', tags: [], createdAt: '2026-01-01T00:00:00.000Z' });
    await state.grants.create({ id: 'gr_new', label: 'new', server: 'a', servers: ['a', 'b'], tags: [], createdAt: '2026-01-02T00:00:00.000Z' }, 'h-new');
    assert.deepEqual((await state.grants.byTokenHash('h-new'))?.servers, ['a', 'b']);
    await state.close();
  });
});
