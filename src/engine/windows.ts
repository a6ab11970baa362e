import type { Limit } from '../policy/schema.js';

const NAMED: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 };

export function windowSeconds(window: Limit['window']): number {
  return typeof window === 'number' ? window : NAMED[window];
}

/** A limit's counter in one scope: its name (without the window), and its key in the current window. */
export interface CounterSlot {
  readonly window: { readonly name: string; readonly ms: number };
  /** A session's counter: no other process serves the session, so none other can charge it. */
  readonly local: boolean;
  /** Start of the window `key` is for. */
  start: number;
  key: string;
}

/** Scopes kept per limit; past this, the cache starts again (a gateway with more live sessions pays one string per call). */
const SLOTS_MAX = 10_000;

/**
 * The counter keys of one limit, made once per scope and once per window instead of on every
 * call: a call finds its slot by the scope's own strings (the server name, the grant id or
 * the session id, each already a string), and a key string is built only when a window starts.
 * A key is `counter␟seconds␟scope…␟windowStart`, so limits with the same counter, window and
 * scope share one count.
 */
export class CounterKeys {
  private readonly prefix: string;
  private readonly ms: number;
  private global?: CounterSlot;
  /** server → (grant id | session id | '' for the server scope) → slot. */
  private readonly scoped = new Map<string, Map<string, CounterSlot>>();
  private size = 0;

  constructor(counter: string, seconds: number, private readonly scope: Limit['scope']) {
    this.prefix = `${counter}\x1f${seconds}\x1f${scope}`;
    this.ms = seconds * 1000;
  }

  slot(server: string, grant: string, session: string, now: number): CounterSlot {
    const slot = this.scope === 'global' ? (this.global ??= this.make('')) : this.scopedSlot(server, this.scope === 'grant' ? grant : this.scope === 'session' ? session : '');
    const start = now - (now % this.ms);
    if (slot.start !== start) {
      slot.start = start;
      slot.key = `${slot.window.name}\x1f${start}`;
    }
    return slot;
  }

  private scopedSlot(server: string, who: string): CounterSlot {
    let byWho = this.scoped.get(server);
    let slot = byWho?.get(who);
    if (slot) return slot;
    if (this.size >= SLOTS_MAX) {
      this.scoped.clear();
      this.size = 0;
      byWho = undefined;
    }
    if (!byWho) this.scoped.set(server, (byWho = new Map()));
    slot = this.make(this.scope === 'server' ? `\x1f${server}` : `\x1f${server}\x1f${who}`);
    byWho.set(who, slot);
    this.size++;
    return slot;
  }

  private make(scopePart: string): CounterSlot {
    return { window: { name: `${this.prefix}${scopePart}`, ms: this.ms }, local: this.scope === 'session', start: NaN, key: '' };
  }
}
