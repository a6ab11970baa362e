import { isAbsolute, join, resolve } from 'node:path';
import { LocalFirstCounters } from './local-counters.js';
import { openMemoryState } from './memory.js';
import { openRedisState } from './redis.js';
import { isRedisDsn, RedisDsnError } from './redis-dsn.js';
import { openSqliteState } from './sqlite.js';
import { StateError } from './errors.js';
import type { StateStore } from './types.js';

export type { Approval, ApprovalDecision, ApprovalStatus, ApprovalStore, Charge, CounterStore, FlagStore, FleetInstance, FleetView, Grant, GrantStore, KillScope, KillSwitchState, PinStore, StateHealth, StateStore } from './types.js';
export { openDatabase } from './sqlite.js';

export { DatabaseFileError, StateError } from './errors.js';
export { isRedisDsn } from './redis-dsn.js';

/**
 * Opens the state store a DSN names: `memory:`, `sqlite:PATH` (relative to `base`), or a bare path
 * ending in .db, or Redis (`redis://`, `rediss://`, or a cluster: `redis+cluster://`, `rediss+cluster://`),
 * the store a fleet of gateways shares.
 */
export function openState(dsn: string, base = process.cwd()): StateStore {
  if (dsn === 'memory:' || dsn === 'memory') return openMemoryState();
  if (dsn.startsWith('sqlite:') || dsn.endsWith('.db')) {
    const path = dsn.startsWith('sqlite:') ? dsn.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') : dsn;
    if (!path) throw new StateError('sqlite state needs a path, e.g. sqlite:./state.db');
    return localFirst(openSqliteState(path === ':memory:' ? path : isAbsolute(path) ? path : resolve(base, path)));
  }
  if (isRedisDsn(dsn)) {
    try {
      return localFirst(openRedisState(dsn));
    } catch (err) {
      if (err instanceof RedisDsnError) throw new StateError(err.message);
      throw err;
    }
  }
  throw new StateError(`unknown state DSN "${dsn}": use memory:, sqlite:PATH or redis://HOST:PORT/DB`);
}

/** Session counters stay in this process's memory whatever the store (no other process serves the session). */
function localFirst(state: StateStore): StateStore {
  return { ...state, counters: new LocalFirstCounters(state.counters) };
}

export function toolgateHome(): string {
  return process.env.TOOLGATE_HOME || join(process.env.HOME || process.cwd(), '.toolgate');
}

export function defaultStateDsn(): string {
  return `sqlite:${join(toolgateHome(), 'state.db')}`;
}
