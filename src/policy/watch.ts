import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { loadPolicyFile, type LoadResult } from './load.js';

/**
 * Reloads a policy file when it changes. Watches the directory, because editors replace files
 * by rename; debounced, because one save is several events.
 */
export function watchPolicyFile(file: string, onLoad: (result: LoadResult) => void, debounceMs = 200): () => void {
  const path = resolve(file);
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, changed) => {
      if (changed !== null && changed !== name) return;
      clearTimeout(timer);
      timer = setTimeout(() => onLoad(loadPolicyFile(path)), debounceMs);
    });
    watcher.unref();
  } catch {
    return () => {};
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
