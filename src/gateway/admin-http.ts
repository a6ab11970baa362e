import type { ServerResponse } from 'node:http';

/** A refused admin request: its status and the one-line reason. */
export class AdminError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body, null, 2));
}

const DURATION = /^(\d+)(s|m|h|d)$/;

/** A duration such as 15m, 1h or 7d, in milliseconds; undefined when absent. */
export function since(text: string | null): number | undefined {
  if (!text) return undefined;
  const m = DURATION.exec(text);
  if (!m) throw new AdminError(400, 'since takes a duration such as 15m, 1h or 7d');
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's']!;
}

/** Own-property lookup of a configured name (a server called "__proto__" or "constructor" is just unknown). */
export function own<T>(map: Record<string, T>, name: string): T | undefined {
  return Object.hasOwn(map, name) ? map[name] : undefined;
}
