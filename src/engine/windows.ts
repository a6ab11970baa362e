import type { Limit } from '../policy/schema.js';

const NAMED: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 };

export function windowSeconds(window: Limit['window']): number {
  return typeof window === 'number' ? window : NAMED[window];
}

/** Fixed windows aligned to the UTC epoch, so a minute resets at :00 and a day at 00:00 UTC. */
export function windowBounds(seconds: number, nowMs: number): { start: number; end: number } {
  const size = seconds * 1000;
  const start = Math.floor(nowMs / size) * size;
  return { start, end: start + size };
}
