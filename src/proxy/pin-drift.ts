/**
 * Pinned tools whose definitions a listing showed changed, shared through the state store by
 * every session and every instance on it. A session knows a tool's definition only from the
 * listings it saw itself; behind a round-robin balancer a 2026-07-28 client lists through one
 * instance and calls through another, and a server that changes a definition silently (no
 * list_changed) would leave every other instance judging the call by the definition it listed
 * before. So the PinGuard that reviews a listing reports what it saw: a pinned tool whose
 * fingerprint differs from its pin is recorded (under the pin key, with the fingerprint seen), one
 * back at its pin is cleared. Every process re-reads the record of each pin key its sessions have
 * used every second (one read per key, whatever the number of sessions), so a change one instance
 * listed is refused by all of them within about a second, as a kill switch is.
 *
 * Only pinned tools are recorded (a tool never pinned is refused anyway), so a record holds at
 * most what an operator pinned. Tool names come from the server: the record is a list of pairs,
 * never an object keyed by them.
 */
import type { OAuthStore } from '../state/types.js';

type Store = Pick<OAuthStore, 'put' | 'get'>;

const REFRESH_MS = 1_000;
/**
 * Keys followed at most (one per server identity the sessions use; past it the least recently used
 * is forgotten and read again when next asked about). A followed key is re-read for as long as the
 * process runs: a session idle for hours must still judge its next call by what was listed since.
 */
const MAX_KEYS = 1_000;
const KEEP_MS = 30 * 24 * 60 * 60_000;

interface Known { drift: Map<string, string>; usedAt: number }

/** What a listing showed of one pinned tool. */
export interface Seen { fingerprint: string; pinned: string }

export class PinDrift {
  private readonly known = new Map<string, Known>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly store: Store, private readonly now: () => number = Date.now, private readonly everyMs = REFRESH_MS) {}

  private static record(key: string): string {
    return `pin-drift:${key}`;
  }

  /** Keeps the record of `key` read (now, and every second while it is used). */
  follow(key: string): void {
    const entry = this.known.get(key);
    if (entry) {
      entry.usedAt = this.now();
      return;
    }
    this.known.set(key, { drift: new Map(), usedAt: this.now() });
    if (this.known.size > MAX_KEYS) {
      const oldest = [...this.known].reduce((a, b) => (b[1].usedAt < a[1].usedAt ? b : a));
      this.known.delete(oldest[0]);
    }
    void this.read(key).catch(() => {});
    if (!this.timer && this.everyMs > 0) {
      this.timer = setInterval(() => void this.refresh(), this.everyMs);
      this.timer.unref();
    }
  }

  /** The fingerprint a listing last showed for `tool` under `key`, when it differed from the pin. */
  drifted(key: string, tool: string): string | undefined {
    const entry = this.known.get(key);
    if (!entry) {
      this.follow(key);
      return undefined;
    }
    entry.usedAt = this.now();
    return entry.drift.get(tool);
  }

  /**
   * A listing showed these pinned tools: records those that differ from their pins, clears those
   * that do not — in this process at once (the listing is the newest word on them), then in the store.
   */
  report(key: string, seen: ReadonlyMap<string, Seen>): Promise<void> {
    const edits = (drift: Map<string, string>): boolean => {
      let changed = false;
      for (const [tool, s] of seen) {
        if (s.fingerprint !== s.pinned) {
          if (drift.get(tool) !== s.fingerprint) { drift.set(tool, s.fingerprint); changed = true; }
        } else if (drift.delete(tool)) changed = true;
      }
      return changed;
    };
    this.follow(key);
    const entry = this.known.get(key)!;
    const local = new Map(entry.drift);
    if (!edits(local)) return Promise.resolve();
    entry.drift = local;
    return (async () => {
      // Applied to the record as it is now: another instance may have recorded other tools.
      const fresh = await this.load(key);
      if (edits(fresh)) await this.store.put(PinDrift.record(key), JSON.stringify([...fresh]), this.now() + KEEP_MS);
      this.remember(key, fresh);
    })();
  }

  /** One read of every followed key (the timer's work; tests call it directly). */
  async refresh(): Promise<void> {
    await Promise.all([...this.known.keys()].map((key) => this.read(key).catch(() => {})));
  }

  private async read(key: string): Promise<void> {
    this.remember(key, await this.load(key));
  }

  private remember(key: string, drift: Map<string, string>): void {
    const entry = this.known.get(key);
    if (entry) entry.drift = drift;
    else this.known.set(key, { drift, usedAt: this.now() });
  }

  private async load(key: string): Promise<Map<string, string>> {
    const raw = await this.store.get(PinDrift.record(key), this.now());
    const drift = new Map<string, string>();
    if (raw === null) return drift;
    try {
      const pairs: unknown = JSON.parse(raw);
      if (Array.isArray(pairs)) {
        for (const p of pairs) if (Array.isArray(p) && typeof p[0] === 'string' && typeof p[1] === 'string') drift.set(p[0], p[1]);
      }
    } catch {
      // A record that is not ours to read: as if none.
    }
    return drift;
  }
}

const byStore = new WeakMap<Store, PinDrift>();

/** The one PinDrift of this process for a state store (its sessions share the reads). */
export function pinDriftFor(store: Store): PinDrift {
  let drift = byStore.get(store);
  if (!drift) {
    drift = new PinDrift(store);
    byStore.set(store, drift);
  }
  return drift;
}
