// The audit log's batch writer in a thread of its own (toolgate serve): hashing and inserting
// happen beside the event loop that forwards calls. Each batch done, successful or not, moves the
// shared counter that a synchronous flush waits on.
import { parentPort, workerData } from 'node:worker_threads';
import { closeDatabase, openDatabase } from '../state/sqlite.js';
import { ChainWriter, type Batch } from './chain.js';

const { file, done } = workerData as { file: string; done: SharedArrayBuffer };
const db = openDatabase(file);
const writer = new ChainWriter(db);
const counter = new Int32Array(done);

parentPort!.on('message', (message: Batch | 'close') => {
  if (message === 'close') {
    closeDatabase(db);
    parentPort!.close();
    return;
  }
  try {
    writer.write(message);
  } catch (err) {
    parentPort!.postMessage({ error: (err as Error).message });
  }
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
});
