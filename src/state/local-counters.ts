import { MemoryCounterStore } from './memory.js';
import type { Awaitable, Charge, CounterStore } from './types.js';

/**
 * A shared counter store with the counters only this process can charge (`Charge.local`: a
 * session's) kept in this process's memory: a session-scoped limit costs no database write or
 * network round trip, whatever the store. A call's charges are still taken all or none: the local
 * ones first (nothing else runs in between, they are in memory), then the shared ones; when
 * those fail, the local ones are given back. When both kinds would fail, the local one is named.
 */
export class LocalFirstCounters implements CounterStore {
  private readonly local = new MemoryCounterStore();

  constructor(private readonly shared: CounterStore) {}

  reserve(charges: readonly Charge[], now: number): Awaitable<number> {
    const locals = countLocal(charges);
    if (locals === 0) return this.shared.reserve(charges, now);
    if (locals === charges.length) return this.local.reserve(charges, now);
    const [mine, theirs, sharedIndex] = split(charges);
    const failedHere = this.local.reserve(mine, now);
    if (failedHere >= 0) return charges.indexOf(mine[failedHere]);
    const giveBack = () => { void this.local.release(mine); };
    let failed: Awaitable<number>;
    try {
      failed = this.shared.reserve(theirs, now);
    } catch (err) {
      giveBack();
      throw err;
    }
    const settle = (f: number) => {
      if (f < 0) return -1;
      giveBack();
      return sharedIndex[f];
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
