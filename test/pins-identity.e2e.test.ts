// Issue 23 #18: pins are kept under what a server is (package or script, and its declared name), not how its command is spelt.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pinKey, serverIdentity } from '../src/risk/identity.js';
import { cli, LENIENT, MEMORY, RawSession, ROOT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/** A server of one's own: the lenient fixture as a script in a package folder. */
function ownPackage(version: string): { dir: string; script: string } {
  const dir = tempDir();
  mkdirSync(join(dir, 'bin'));
  const script = join(dir, 'bin', 'server.mjs');
  copyFileSync(LENIENT, script);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'acme-mcp', version }));
  return { dir, script };
}

describe('server identity for pins', () => {
  it('one package however npx or node spells it; the version is beside the identity, not in it', () => {
    const spellings = [
      ['npx', 'mcp-server-memory'], ['npx', '-y', '@modelcontextprotocol/server-memory'], ['npx', '-y', '@modelcontextprotocol/server-memory@0.0.1'],
      [process.execPath, MEMORY],
    ];
    const ids = spellings.map(([command, ...args]) => serverIdentity({ kind: 'command', command, args, cwd: ROOT }));
    assert.deepEqual(new Set(ids.map((i) => i.what)), new Set(['@modelcontextprotocol/server-memory']));
    assert.equal(ids[2].version, '0.0.1');
  });

  it('node scripts are told apart by their resolved path, or their package', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.js'), '');
    writeFileSync(join(dir, 'b.js'), '');
    const a = serverIdentity({ kind: 'command', command: 'node', args: ['./a.js'], cwd: dir });
    const b = serverIdentity({ kind: 'command', command: 'node', args: [join(dir, 'b.js')], cwd: '/' });
    assert.notEqual(a.what, b.what);
    assert.ok(a.what.endsWith('/a.js') && a.what.startsWith('/'), a.what);
    const own = ownPackage('2.1.0');
    assert.deepEqual(serverIdentity({ kind: 'command', command: 'node', args: ['bin/server.mjs'], cwd: own.dir }), { what: 'acme-mcp', version: '2.1.0' });
    assert.equal(pinKey({ what: 'acme-mcp', version: '2.1.0' }, 'lenient'), 'acme-mcp (lenient)');
  });
});

describe('pins across spellings and upgrades', () => {
  it('a pin made with one spelling holds for another; an upgrade that changes a tool is a change, not a new server', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const v1 = ownPackage('1.0.0');
    const pinned = await cli(['pin', '--json', '--', process.execPath, v1.script], env);
    assert.equal(pinned.code, 0, pinned.stderr);
    assert.deepEqual([JSON.parse(pinned.stdout).key, JSON.parse(pinned.stdout).version], ['acme-mcp (lenient)', '1.0.0']);
    // Spelt relatively, from the package's folder: the same server, pinned.
    const record = await cli(['record', '--no-catalog', '--json', '--', 'node', './bin/server.mjs'], env, v1.dir);
    assert.equal(JSON.parse(record.stdout).identity.verification, 'pinned', record.stderr);

    // Version 1.1.0 of the same package, installed elsewhere, changes echo and lists one more tool.
    const v2 = ownPackage('1.1.0');
    const upgraded = await cli(['pin', '--json', '--', process.execPath, v2.script], { ...env, LENIENT_VARIANT: 'rugpull' });
    assert.equal(upgraded.code, 1, 'a difference against the pins');
    const r = JSON.parse(upgraded.stdout);
    assert.deepEqual([r.pinned, r.version, r.added, r.changed], [false, '1.1.0', ['exfiltrate'], ['echo']]);

    // toolgate run holds it too: with pins.on_change block, the changed tool is hidden.
    const policy = writePolicy(home, { version: '1', default: 'allow', pins: { on_change: 'block' } });
    const session = new RawSession(['-p', policy, '--', process.execPath, v2.script], { ...env, LENIENT_VARIANT: 'rugpull' });
    try {
      await session.initialize();
      const listed = await session.request(2, 'tools/list', {}) as { result: { tools: { name: string }[] } };
      const names = listed.result.tools.map((t) => t.name);
      // (the listing's first page: echo, delete_all, fail, hang)
      assert.ok(names.includes('delete_all') && !names.includes('echo'), names.join(','));
    } finally {
      await session.close();
    }
  });

  it('a server that declares another name is still checked against its package\'s pins', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const v1 = ownPackage('1.0.0');
    assert.equal((await cli(['pin', '--json', '--', process.execPath, v1.script], env)).code, 0);
    // The next version renames itself in serverInfo and rewrites echo's description.
    const v2 = ownPackage('1.1.0');
    writeFileSync(v2.script, readFileSync(v2.script, 'utf8').replace("serverInfo: { name: 'lenient'", "serverInfo: { name: 'renamed'"));
    const r = await cli(['pin', '--json', '--', process.execPath, v2.script], { ...env, LENIENT_VARIANT: 'rugpull' });
    assert.equal(r.code, 1, r.stdout);
    assert.deepEqual([JSON.parse(r.stdout).key, JSON.parse(r.stdout).changed], ['acme-mcp (renamed)', ['echo']]);
  });

  it('pins stored under the old, spelling-derived name are still found', async () => {
    const home = tempDir();
    const env = testEnv(home, { MEMORY_FILE_PATH: join(home, 'm.jsonl') });
    // Where earlier versions kept them: the name toolgate run derived from the command line.
    const old = await cli(['pin', '--name', 'mcp-server-memory', '--json', '--', 'npx', 'mcp-server-memory'], env, ROOT);
    assert.equal(old.code, 0, old.stderr);
    const record = await cli(['record', '--no-catalog', '--json', '--', 'npx', 'mcp-server-memory'], env, ROOT);
    assert.equal(JSON.parse(record.stdout).identity.verification, 'pinned', record.stderr);
    // Pinning again writes under the identity key, which every spelling finds.
    await cli(['pin', '--json', '--', 'npx', 'mcp-server-memory'], env, ROOT);
    const other = await cli(['record', '--no-catalog', '--json', '--', process.execPath, MEMORY], env, ROOT);
    assert.equal(JSON.parse(other.stdout).identity.verification, 'pinned', other.stderr);
  });
});
