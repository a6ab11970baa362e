import { statSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { loadPolicyFile, type LoadResult } from './load.js';

/**
 * Reloads a policy file when it changes; debounced, because one save is several events.
 *
 * Watches the file itself, not its folder: databases beside the policy write their WAL and
 * journals on every call, and each of those writes would wake a folder watch. Editors replace a
 * file by rename, which leaves a file watch on the old inode, so after every event the name is
 * watched again when it names another file now; while the name names nothing (between an
 * editor's unlink and rename), the folder is watched until it is back.
 */
export function watchPolicyFile(file: string, onLoad: (result: LoadResult) => void, debounceMs = 200): () => void {
  const path = resolve(file);
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  /** The inode watched; null while the folder is watched instead. */
  let watched: number | null = null;
  let stopped = false;

  const inode = (): number | null => {
    try { return statSync(path).ino; } catch { return null; }
  };
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (stopped) return;
      if (watched === null || inode() !== watched) attach();
      onLoad(loadPolicyFile(path));
    }, debounceMs);
  };
  const attach = (): boolean => {
    watcher?.close();
    watcher = undefined;
    // The inode is read before the watch starts: should the file be replaced in between, the
    // next event (on the new file) finds another inode and watches again.
    const ino = inode();
    try {
      if (ino !== null) {
        watcher = watch(path, changed);
        watched = ino;
      } else {
        watcher = watch(dirname(path), (_event, changedName) => { if (changedName === null || changedName === name) changed(); });
        watched = null;
      }
      watcher.on('error', () => { /* the file went away; the pending reload watches again */ });
      watcher.unref();
      return true;
    } catch {
      return false;
    }
  };
  if (!attach()) return () => {};
  return () => {
    stopped = true;
    clearTimeout(timer);
    watcher?.close();
  };
}
