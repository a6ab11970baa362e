import { Worker } from 'node:worker_threads';
import type { Batch } from './chain.js';

/**
 * Writes batches in a worker thread; `drain` waits until every batch sent is done. A thread that
 * dies is reported and not used again; the journals of batches it had not written stay on disk
 * and are replayed by the next process that opens the log after this one ends.
 */
export class ThreadWriter {
  alive = true;
  private readonly worker: Worker;
  private readonly done = new Int32Array(new SharedArrayBuffer(4));
  private sent = 0;

  constructor(file: string, onError: (message: string) => void) {
    const workerData = { file, done: this.done.buffer };
    // Run from TypeScript sources (the tests, under tsx), the thread registers tsx itself first.
    this.worker = import.meta.url.endsWith('.ts')
      ? new Worker(`import('tsx/esm/api').then((t) => { t.register(); return import(${JSON.stringify(new URL('./writer-thread.ts', import.meta.url).href)}); });`, { eval: true, workerData })
      : new Worker(new URL('./writer-thread.js', import.meta.url), { workerData });
    this.worker.on('message', (m: { error?: string }) => { if (m.error) onError(m.error); });
    this.worker.on('error', (err) => { this.alive = false; onError(err.message); });
    this.worker.on('exit', () => { this.alive = false; });
    this.worker.unref();
  }

  write(batch: Batch): void {
    this.sent++;
    this.worker.postMessage(batch);
  }

  drain(): void {
    for (let done = Atomics.load(this.done, 0); done < this.sent && this.alive; done = Atomics.load(this.done, 0)) {
      Atomics.wait(this.done, 0, done, 100);
    }
  }

  close(): void {
    this.drain();
    this.worker.postMessage('close');
  }
}

