// The pool bench's own instruments: the process-tree walk its memory figures rest on, the open
// loop its latency figures rest on, and the optional pool block.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { openLoop } from '../bench/pool.js';
import { poolBlock } from '../bench/pool-serve.js';
import { alive, descendants, sampleTree } from '../bench/proc-tree.js';

const started: number[] = [];
after(() => { for (const pid of started) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } });

test('the tree walk finds grandchildren and sums their resident memory', { skip: process.platform !== 'linux' }, async () => {
  // A child that starts a grandchild and prints its pid.
  const child = spawn(process.execPath, ['-e', `
    const { spawn } = require('node:child_process');
    const g = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    console.log(g.pid);
    setInterval(() => {}, 1000);
  `], { stdio: ['ignore', 'pipe', 'ignore'] });
  started.push(child.pid!);
  const [line] = await once(child.stdout!, 'data') as [Buffer];
  const grandchild = Number(line.toString().trim());
  started.push(grandchild);
  const tree = descendants(process.pid);
  assert.ok(tree.includes(child.pid!), 'the child is a descendant');
  assert.ok(tree.includes(grandchild), 'the grandchild is a descendant');
  const sample = sampleTree(child.pid!);
  assert.equal(sample.count, 1, 'the child has one descendant');
  assert.ok(sample.gateway > 0 && sample.children > 0, 'both have resident memory');
  assert.equal(sample.total, sample.gateway + sample.children);
  process.kill(grandchild, 'SIGKILL');
  child.kill('SIGKILL');
  await once(child, 'exit');
  assert.equal(alive(child.pid!), false);
  assert.deepEqual(descendants(child.pid!), [], 'a gone process has no descendants');
});

test('the open loop sends every call on schedule without waiting for replies, round-robin over the callers', async () => {
  const sentBy: number[] = [];
  const replies: (() => void)[] = [];
  // No call is answered until every call has been sent: a closed loop would stop after three.
  const callers = [0, 1, 2].map((i) => () => new Promise<void>((r) => { sentBy.push(i); replies.push(r); if (sentBy.length === 20) for (const reply of replies) reply(); }));
  const result = await openLoop(callers, 200, 0.05, 0.05);
  assert.equal(sentBy.length, 20, '(0.05 s + 0.05 s warm-up) at 200 calls/s');
  assert.deepEqual(sentBy.slice(0, 6), [0, 1, 2, 0, 1, 2]);
  assert.equal(result.latencies.length, 10, 'the warm-up calls are not measured');
  assert.equal(result.errors, 0);
});

test('failed calls are counted with the first error, escaped on one line', async () => {
  const result = await openLoop([() => Promise.reject(new Error('bad\n\u001b[31mred'))], 100, 0.05, 0);
  assert.equal(result.errors, 5);
  assert.equal(result.latencies.length, 0);
  assert.equal(result.firstError, JSON.stringify('bad\n\u001b[31mred'));
  assert.ok(!result.firstError!.includes('\u001b'), 'no raw escape reaches the terminal');
});

test('TOOLGATE_BENCH_POOL is optional and must be a JSON object', () => {
  const saved = process.env.TOOLGATE_BENCH_POOL;
  try {
    delete process.env.TOOLGATE_BENCH_POOL;
    assert.equal(poolBlock(), undefined);
    process.env.TOOLGATE_BENCH_POOL = '{"max":8,"share":"grant"}';
    assert.deepEqual(poolBlock(), { max: 8, share: 'grant' });
    process.env.TOOLGATE_BENCH_POOL = '[8]';
    assert.throws(() => poolBlock(), /JSON object/);
  } finally {
    if (saved === undefined) delete process.env.TOOLGATE_BENCH_POOL; else process.env.TOOLGATE_BENCH_POOL = saved;
  }
});
