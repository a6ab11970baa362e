import { isObject, type Json } from './messages.js';
import type { Pending } from './session-types.js';

/** The longest wait setTimeout takes (2^31 − 1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Deadlines of forwarded tools/calls: one timer for the whole session, due at the earliest
 * deadline of its forwarded calls (none per call); each progress notification for a call starts
 * its wait again.
 */
export class CallDeadlines {
  private timer?: NodeJS.Timeout;
  /** Forwarded tools/calls by their progress token, so the server's progress keeps them alive. */
  private readonly byProgressToken = new Map<unknown, Pending>();

  constructor(
    /** How long a forwarded call may wait for its answer (0: for ever). */
    readonly timeoutMs: number,
    private readonly pending: Map<string, Pending>,
    private readonly timedOut: (key: string, pending: Pending) => void,
    private readonly closed: () => boolean,
  ) {}

  /** The call was written upstream: its wait starts now. */
  start(pending: Pending): void {
    pending.deadline = performance.now() + this.timeoutMs;
    this.timer ??= this.arm(this.timeoutMs);
    if (pending.progressToken !== undefined) this.byProgressToken.set(pending.progressToken, pending);
  }

  /** The call ended: it no longer has a deadline. */
  clear(pending: Pending): void {
    if (pending.deadline !== undefined) {
      pending.deadline = undefined;
      if (this.byProgressToken.get(pending.progressToken) === pending) this.byProgressToken.delete(pending.progressToken);
    }
  }

  /** A message from the server: progress for a forwarded call starts its wait again. */
  heard(message: Json): void {
    if (this.byProgressToken.size > 0 && message.method === 'notifications/progress' && isObject(message.params)) {
      const waiting = this.byProgressToken.get(message.params.progressToken);
      if (waiting?.deadline !== undefined) waiting.deadline = performance.now() + this.timeoutMs;
    }
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): NodeJS.Timeout {
    // Node runs a longer timeout after 1 ms: a far deadline is checked again at the longest wait.
    const timer = setTimeout(this.check, Math.min(ms, MAX_TIMER_MS));
    timer.unref();
    return timer;
  }

  /**
   * Times out the calls whose deadline has passed, then waits for the earliest of the rest. The
   * timer that fired stays set meanwhile, so a call forwarded during the check (a client that
   * answers a timeout with a new call) arms none of its own; the map's iteration reaches it.
   */
  private readonly check = (): void => {
    const now = performance.now();
    let next = Infinity;
    for (const [key, pending] of this.pending) {
      if (pending.deadline === undefined) continue;
      if (pending.deadline <= now) this.timedOut(key, pending);
      else next = Math.min(next, pending.deadline);
    }
    this.timer = next === Infinity || this.closed() ? undefined : this.arm(next - now);
  };
}
