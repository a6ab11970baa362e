import { MemoryCounterStore } from './memory.js';
import type { Awaitable, Charge, CounterStore, FlagStore } from './types.js';

/**
 * A shared counter store with the counters only this process can charge (`Charge.local`: a
 * session's) kept in this process's memory: a session-scoped limit costs no database write or
 * network round trip, whatever the store. A call's charges are still taken all or none: the local
 * ones first (nothing else runs in between, they are in memory), then the shared ones; when
 * those fail (or the kill switch is on), the local ones are given back. When both kinds would
 * fail, the local one is named.
 */
export class LocalFirstCounters implements CounterStore {
  private readonly local = new MemoryCounterStore();

  /** Only offered when the shared store offers it (`Engine` checks for the method). */
  readonly reserveUnlessKilled: CounterStore['reserveUnlessKilled'];

  constructor(private readonly shared: CounterStore) {
    if (shared.reserveUnlessKilled) this.reserveUnlessKilled = (server, charges, now) => this.take(server, charges, now);
  }

  /** The shared store's kill switch: `reserveUnlessKilled` reads it there, in the shared reservation. */
  get flags(): FlagStore | undefined {
    return this.shared.flags;
  }

  reserve(charges: readonly Charge[], now: number): Awaitable<number> {
    return this.take(null, charges, now);
  }

  /**
   * With a server, the kill switch is read in the shared store's reservation, also when every
   * charge is local (the shared reservation is then empty).
   */
  private take(server: string | null, charges: readonly Charge[], now: number): Awaitable<number> {
    const shared = (list: readonly Charge[]) => (server === null ? this.shared.reserve(list, now) : this.shared.reserveUnlessKilled!(server, list, now));
    const locals = countLocal(charges);
    if (locals === 0) return shared(charges);
    if (locals === charges.length && server === null) return this.local.reserve(charges, now);
    const [mine, theirs, sharedIndex] = split(charges);
    const failedHere = this.local.reserve(mine, now);
    if (failedHere >= 0) return charges.indexOf(mine[failedHere]);
    const giveBack = () => { void this.local.release(mine); };
    let failed: Awaitable<number>;
    try {
      failed = shared(theirs);
    } catch (err) {
      giveBack();
      throw err;
    }
    const settle = (f: number) => {
      if (f === -1) return -1;
      giveBack();
      return f >= 0 ? sharedIndex[f] : f;
    };
    return failed instanceof Promise ? failed.then(settle, (err: unknown) => { giveBack(); throw err; }) : settle(failed);
  }

  async release(charges: readonly Charge[]): Promise<void> {
    const locals = countLocal(charges);
    if (locals === 0) return this.shared.release(charges);
    const [mine, theirs] = split(charges);
    await this.local.release(mine);
    if (theirs.length > 0) await this.shared.release(theirs);
  }

  /** A key lives in one of the two stores (0 in the other). */
  async value(key: string, now: number): Promise<number> {
    return (await this.local.value(key, now)) + (await this.shared.value(key, now));
  }
}

function countLocal(charges: readonly Charge[]): number {
  let n = 0;
  for (const c of charges) if (c.local) n++;
  return n;
}

/** The local charges, the shared ones, and each shared one's index among all. */
function split(charges: readonly Charge[]): [Charge[], Charge[], number[]] {
  const mine: Charge[] = [];
  const theirs: Charge[] = [];
  const sharedIndex: number[] = [];
  charges.forEach((c, i) => {
    if (c.local) mine.push(c);
    else {
      theirs.push(c);
      sharedIndex.push(i);
    }
  });
  return [mine, theirs, sharedIndex];
}
