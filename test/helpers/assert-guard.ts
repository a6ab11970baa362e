// Node 20's assert.ok(value) without a message, when it fails, writes its message from the source of
// the call: it reads the file named by the call site at the call site's line and column. Under tsx
// those are the line and column of the transpiled code, not of the .ts file on disk: Node then reads
// the wrong text (it quotes another line), and for some files (floods.e2e.test.ts at 6b94fc6, with
// multi-byte characters before the column) its reader recursed, re-parsing the text with acorn at
// each level (findColumn 170+ frames deep after 25 s of CPU, seen with `node inspect -p`). The
// failing assertion spins the event loop for many minutes: no
// test timeout can fire (timers never run), and the file hits the runner's 10-minute file timeout
// with no subtest output. This was the "hang" of floods.e2e.test.ts under load.
//
// Imported for its effect (package.json's `npm test` and test/helpers/toolgate.ts): a failing
// assert.ok / assert.strict.ok without a message throws the same AssertionError at once, with the
// value it got; the stack (source-mapped by tsx) says where. Assertions with a message are untouched.
import assert from 'node:assert';
import { inspect } from 'node:util';

type Ok = ((value: unknown, message?: string | Error) => void) & { guarded?: true };

const original = assert.ok as Ok;
if (!original.guarded) {
  const ok: Ok = function ok(this: unknown, ...args: unknown[]): void {
    if (args.length === 0 || args[0] || args[1] != null) return (original as (...a: unknown[]) => void).apply(this, args);
    const err = new assert.AssertionError({
      message: `The expression evaluated to a falsy value: ${inspect(args[0])}`,
      actual: args[0], expected: true, operator: '==', stackStartFn: ok,
    });
    err.generatedMessage = true;
    throw err;
  };
  ok.guarded = true;
  assert.ok = ok as typeof assert.ok;
  assert.strict.ok = ok as typeof assert.strict.ok;
}
