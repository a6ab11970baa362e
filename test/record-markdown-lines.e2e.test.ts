import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cli, FIXTURES, tempDir, testEnv } from './helpers/toolgate.js';

const SERVER = [process.execPath, join(FIXTURES, 'newline-server.mjs')];

/**
 * `toolgate record --format md` prints to the terminal (or writes pages a person reads): a server
 * must not be able to forge a line of the record with a line break in its name, title, version or
 * a tool's name, nor a section with one in a description.
 */
describe('markdown records: a server\'s line breaks cannot forge lines', () => {
  it('the server page: name, title, version and tool names stay on their line', async () => {
    const home = tempDir();
    const out = await cli(['record', '--format', 'md', '--no-catalog', '--', ...SERVER], testEnv(home));
    assert.equal(out.code, 0, out.stderr);
    const lines = out.stdout.split('\n');
    assert.deepEqual(lines.filter((l) => /^Risk grade/.test(l)).length, 1, 'one grade line: the record\'s own');
    assert.doesNotMatch(out.stdout, /^Risk grade \*\*A\*\*/m);
    assert.doesNotMatch(out.stdout, /^- verification: \*\*verified\*\*/m);
    assert.doesNotMatch(out.stdout, /^- origin: npm official/m);
    assert.doesNotMatch(out.stdout, /^\| wipe_disk \|/m);
    assert.match(out.stdout, /^# Notes\\n- verification: \*\*verified\*\*: Risk & Policy$/m);
    assert.match(out.stdout, /^- server: newline-fixture\\n\\nRisk grade \*\*A\*\* \(no risky tools\) 1\.0\\r\\n- origin: npm official/m);
  });

  it('a tool page: a description of several lines is quoted, so it cannot add a section', async () => {
    const home = tempDir();
    const dir = join(home, 'md');
    const out = await cli(['record', '--format', 'md', '-o', dir, '--no-catalog', '--', ...SERVER], testEnv(home));
    assert.equal(out.code, 0, out.stderr);
    const page = readFileSync(join(dir, 'tools', 'delete_files.md'), 'utf8');
    assert.equal(page.split('\n').filter((l) => l === '## Verdict').length, 1, 'one Verdict section: the record\'s own');
    assert.match(page, /^> Delete files permanently from the disk\.\n>\n> ## Verdict\n>\n> \*\*Allowed\*\* — it only reads\.$/m);
    assert.match(page, /^\*\*Needs approval\*\*/m);
  });
});
