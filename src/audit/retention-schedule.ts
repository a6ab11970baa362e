import { Worker } from 'node:worker_threads';
import type { PruneResult } from './retention.js';

export interface RetentionSchedule {
  /** Ends the schedule; a prune under way stops after its current batch. */
  stop(): Promise<void>;
}

/**
 * `audit: {retain}` in serve: every `everyMs` (and once soon after start), rows older than
 * `retain` are pruned in a worker thread, never on the call path. One prune at a time.
 */
export function scheduleRetention(file: string, retain: { ms: number; text: string }, everyMs: number, instance: string, report: (r: { result?: PruneResult; error?: string }) => void): RetentionSchedule {
  const stopFlag = new Int32Array(new SharedArrayBuffer(4));
  let running: Promise<void> | undefined;
  const run = (): void => {
    if (running) return;
    const workerData = { file, stop: stopFlag.buffer, before: new Date(Date.now() - retain.ms).toISOString(), instance, by: `audit.retain ${retain.text}` };
    // Run from TypeScript sources (the tests, under tsx), the thread registers tsx itself first.
    const worker = import.meta.url.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(new URL('./prune-thread.ts', import.meta.url).href)}); });`, { eval: true, workerData })
      : new Worker(new URL('./prune-thread.js', import.meta.url), { workerData });
    worker.on('message', (m: { result?: PruneResult; error?: string }) => report(m));
    worker.on('error', (err) => report({ error: err.message }));
    running = new Promise((done) => worker.on('exit', () => { running = undefined; done(); }));
  };
  const first = setTimeout(run, Math.min(everyMs, 10_000));
  const timer = setInterval(run, everyMs);
  first.unref();
  timer.unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(timer);
      Atomics.store(stopFlag, 0, 1);
      await running;
    },
  };
}
