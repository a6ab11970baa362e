import { addressKey } from '../http/client-address.js';

/** What a minute of failed attempts from one address at one target (a server, or the admin API) adds up to. */
export interface FailureSummary {
  /** The address as `addressKey` spells it (an IPv6 client: its /64). */
  address: string;
  /** A server name, or `admin`. */
  target: string;
  count: number;
  /** The reason of the last attempt. */
  reason: string;
  since: number;
}

interface Window {
  started: number;
  count: number;
  byTarget: Map<string, { count: number; reason: string }>;
}

export interface AuthFailuresOptions {
  /** Failed attempts in a window from which an address's further failures are answered 429. */
  limit: number;
  windowMs: number;
  /** One call per address, target and window, when the window ends. */
  report(summary: FailureSummary): void;
  now?: () => number;
}

/**
 * Failed authentication by client address (an IPv6 client: its /64), for grants and the admin token alike. It slows
 * guessing without locking anyone out: a valid credential is never looked up here, so it works
 * from a throttled address too. Failures are reported once per address, target and window with
 * a count, so a flood of guesses costs the audit log one row a minute, not one per guess.
 */
export class AuthFailures {
  private readonly windows = new Map<string, Window>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly now: () => number;

  constructor(private readonly opts: AuthFailuresOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Counts a failed attempt; true when the address is over the limit (answer 429). */
  failed(from: string, target: string, reason: string): boolean {
    const address = addressKey(from);
    let w = this.windows.get(address);
    if (!w) {
      w = { started: this.now(), count: 0, byTarget: new Map() };
      this.windows.set(address, w);
      const timer = setTimeout(() => { this.timers.delete(timer); this.end(address); }, this.opts.windowMs);
      timer.unref();
      this.timers.add(timer);
    }
    w.count++;
    const t = w.byTarget.get(target) ?? { count: 0, reason };
    t.count++;
    t.reason = reason;
    w.byTarget.set(target, t);
    return w.count > this.opts.limit;
  }

  /** Reports every open window now (the gateway is stopping). */
  flush(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const address of [...this.windows.keys()]) this.end(address);
  }

  private end(address: string): void {
    const w = this.windows.get(address);
    if (!w) return;
    this.windows.delete(address);
    for (const [target, t] of w.byTarget) this.opts.report({ address, target, count: t.count, reason: t.reason, since: w.started });
  }
}
