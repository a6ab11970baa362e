import { MemoryFlowStore } from './flow-touches.js';
import { MemoryApprovalStore } from './memory-approvals.js';
import { MemoryRequestStateStore } from './request-states.js';
import { KILLED, type Charge, type CounterStore, type FlagStore, type Grant, type GrantStore, type KillScope, type KillSwitchState, type OAuthRecord, type OAuthStore, type PinStore, type StateStore } from './types.js';

interface Cell { value: number; expiresAt: number }

/** Counters in this process only. Single-threaded JS makes check-then-take atomic. */
export class MemoryCounterStore implements CounterStore {
  private cells = new Map<string, Cell>();
  private sweepAt = 0;

  constructor(readonly flags?: MemoryFlagStore) {}

  reserveUnlessKilled(server: string, charges: readonly Charge[], now: number): number {
    return this.flags?.killedFor(server) ? KILLED : this.reserve(charges, now);
  }

  private current(key: string, now: number): number {
    const cell = this.cells.get(key);
    return cell && cell.expiresAt > now ? cell.value : 0;
  }

  reserve(charges: readonly Charge[], now: number): number {
    for (let i = 0; i < charges.length; i++) {
      const c = charges[i];
      let pending = c.amount;
      for (let j = 0; j < i; j++) if (charges[j].key === c.key) pending += charges[j].amount;
      if (this.current(c.key, now) + pending > c.max) return i;
    }
    for (const c of charges) {
      const cell = this.cells.get(c.key);
      if (cell && cell.expiresAt > now) cell.value += c.amount;
      else this.cells.set(c.key, { value: c.amount, expiresAt: c.expiresAt });
    }
    if (now >= this.sweepAt) this.sweep(now);
    return -1;
  }

  async release(charges: readonly Charge[]): Promise<void> {
    for (const c of charges) {
      const cell = this.cells.get(c.key);
      if (cell) cell.value = Math.max(0, cell.value - c.amount);
    }
  }

  async value(key: string, now: number): Promise<number> {
    return this.current(key, now);
  }

  private sweep(now: number): void {
    this.sweepAt = now + 60_000;
    for (const [key, cell] of this.cells) if (cell.expiresAt <= now) this.cells.delete(key);
  }
}

export class MemoryFlagStore implements FlagStore {
  private switches = new Map<KillScope, KillSwitchState>();

  killedFor(server: string): KillScope | null {
    if (this.switches.get('*')?.on) return '*';
    return this.switches.get(server)?.on ? server : null;
  }

  async setKillSwitch(scope: KillScope, on: boolean, reason?: string): Promise<void> {
    this.switches.set(scope, { scope, on, reason, at: new Date().toISOString() });
  }

  async listKillSwitches(): Promise<KillSwitchState[]> {
    return [...this.switches.values()];
  }
}

export class MemoryPinStore implements PinStore {
  private readonly pins = new Map<string, Record<string, string>>();
  get(server: string): Record<string, string> | null {
    return this.pins.get(server) ?? null;
  }
  set(server: string, pins: Record<string, string>): void {
    this.pins.set(server, { ...pins });
  }
}

export class MemoryGrantStore implements GrantStore {
  private readonly grants = new Map<string, { grant: Grant; hash: string }>();
  create(grant: Grant, tokenHash: string): void {
    this.grants.set(grant.id, { grant: { ...grant }, hash: tokenHash });
  }
  byTokenHash(tokenHash: string): Grant | null {
    for (const g of this.grants.values()) if (g.hash === tokenHash) return { ...g.grant };
    return null;
  }
  list(): Grant[] {
    return [...this.grants.values()].map((g) => ({ ...g.grant }));
  }
  rotate(id: string, tokenHash: string, expiresAt?: string): boolean {
    const g = this.grants.get(id);
    if (!g || g.grant.revokedAt) return false;
    g.hash = tokenHash;
    if (expiresAt) g.grant.expiresAt = expiresAt;
    return true;
  }
  revoke(id: string, at: string): boolean {
    const g = this.grants.get(id);
    if (!g || g.grant.revokedAt) return false;
    g.grant.revokedAt = at;
    return true;
  }
}

export class MemoryOAuthStore implements OAuthStore {
  private readonly records = new Map<string, { value: string; expiresAt: number }>();
  put(key: string, value: string, expiresAt: number): void {
    this.records.set(key, { value, expiresAt });
  }
  get(key: string, now: number): string | null {
    const r = this.records.get(key);
    if (r && r.expiresAt <= now) this.records.delete(key);
    return r && r.expiresAt > now ? r.value : null;
  }
  take(key: string, now: number): string | null {
    const value = this.get(key, now);
    this.records.delete(key);
    return value;
  }
  delete(key: string): void {
    this.records.delete(key);
  }
  count(prefix: string, now: number): number {
    let n = 0;
    for (const [key, r] of this.records) {
      if (r.expiresAt <= now) this.records.delete(key);
      else if (key.startsWith(prefix)) n++;
    }
    return n;
  }

  putIfUnder(records: readonly OAuthRecord[], caps: readonly { prefix: string; max: number }[], now: number): number {
    const full = caps.findIndex((c) => this.count(c.prefix, now) >= c.max);
    if (full < 0) for (const r of records) this.put(r.key, r.value, r.expiresAt);
    return full;
  }
}

export function openMemoryState(): StateStore {
  const flags = new MemoryFlagStore();
  return {
    kind: 'memory', counters: new MemoryCounterStore(flags), flags, pins: new MemoryPinStore(), grants: new MemoryGrantStore(),
    approvals: new MemoryApprovalStore(), oauth: new MemoryOAuthStore(), requestStates: new MemoryRequestStateStore(), flows: new MemoryFlowStore(), close: async () => {},
  };
}
