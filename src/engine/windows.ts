import type { Limit } from '../policy/schema.js';

const NAMED: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86400 };

export function windowSeconds(window: Limit['window']): number {
  return typeof window === 'number' ? window : NAMED[window];
}
