// A prune in a thread of its own (toolgate serve with audit.retain): its batches and their waits
// stay off the event loop that forwards calls. Told to stop (the shared flag), it ends after the
// batch it is in.
import { parentPort, workerData } from 'node:worker_threads';
import { closeDatabase, openDatabase } from '../state/sqlite.js';
import { pruneAudit, type PruneOptions } from './retention.js';

const { file, stop, ...opts } = workerData as { file: string; stop: SharedArrayBuffer } & Omit<PruneOptions, 'stopping' | 'pause'>;
const flag = new Int32Array(stop);
const db = openDatabase(file);
try {
  const result = await pruneAudit(db, { ...opts, stopping: () => Atomics.load(flag, 0) !== 0 });
  parentPort!.postMessage({ result });
} catch (err) {
  parentPort!.postMessage({ error: (err as Error).message });
} finally {
  closeDatabase(db);
}
