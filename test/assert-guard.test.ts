// helpers/assert-guard.ts: a failing assert.ok without a message ends at once under tsx. Without the
// guard, Node 20 writes the message from the .ts file read at the transpiled line and column: it quotes
// some other line of the file, and for some contents (the head of floods.e2e.test.ts at 6b94fc6, with
// its multi-byte characters) it spun for many minutes: the CI "hang" of floods.e2e.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT, tempDir } from './helpers/toolgate.js';

it('a failing assert.ok without a message fails at once, saying what it got', { timeout: 120_000 }, async () => {
  const head = readFileSync(join(ROOT, 'test/floods.e2e.test.ts'), 'utf8').split("describe('")[0]
    .replaceAll("from './helpers/", `from '${join(ROOT, 'test/helpers')}/`);
  const file = join(tempDir(), 'unlabelled.test.ts');
  writeFileSync(file, `${head}
it('fails', async () => {
  const listed = async () => ['a'];
  assert.ok((await listed()).includes('b'));
});
`);
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // its own test run, not a part of this one
  const out = await new Promise<{ code: number | null; killed: boolean; text: string }>((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', '--test', file], { cwd: ROOT, env, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err as { code?: number }).code ?? null : 0, killed: err?.killed ?? false, text: stdout + stderr });
    });
  });
  assert.equal(out.killed, false, `the child spun until it was killed: ${out.text.slice(-500)}`);
  assert.equal(out.code, 1, out.text);
  assert.match(out.text, /The expression evaluated to a falsy value: false/);
  assert.match(out.text, /unlabelled\.test\.ts:\d+:\d+/, 'the stack says where');
});
