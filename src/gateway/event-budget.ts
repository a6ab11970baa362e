/** A session's store of SSE events kept for Last-Event-ID, as the shared budget sees it. */
export interface EventHolder {
  readonly bufferedBytes: number;
  /** Drops the holder's oldest kept event; false when it keeps none. */
  evictOldest(): boolean;
}

/**
 * The bytes of SSE events all Streamable HTTP sessions keep for clients that resume a dropped
 * stream. Each session keeps at most `perSession` bytes; past `total`, the session that keeps
 * the most gives up its oldest events first, so one busy session cannot starve the others.
 */
export class EventBudget {
  bytes = 0;
  events = 0;
  private readonly holders = new Set<EventHolder>();

  constructor(readonly perSession: number, readonly total: number) {}

  added(holder: EventHolder, bytes: number): void {
    this.holders.add(holder);
    this.bytes += bytes;
    this.events++;
    while (this.bytes > this.total) {
      let largest: EventHolder | undefined;
      for (const h of this.holders) if (!largest || h.bufferedBytes > largest.bufferedBytes) largest = h;
      if (!largest || !largest.evictOldest()) break;
    }
  }

  removed(bytes: number): void {
    this.bytes -= bytes;
    this.events--;
  }

  /** The holder keeps nothing any more (its session closed). */
  gone(holder: EventHolder): void {
    this.holders.delete(holder);
  }
}
