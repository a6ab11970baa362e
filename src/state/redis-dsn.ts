/** What a `redis://` or `rediss://` state DSN says, with toolgate's own query parameters taken out. */
export interface RedisDsn {
  /** For ioredis: scheme, credentials, host, port and database number. */
  url: string;
  /** host:port/db, without credentials: the only form that reaches messages and logs. */
  display: string;
  /** Every key and channel starts with `${prefix}:`, so several gateways (or fleets) can share one Redis. */
  prefix: string;
  /** The longest a command may take before the call it serves is decided without it. */
  timeoutMs: number;
}

export class RedisDsnError extends Error {}

const KNOWN = new Set(['prefix', 'timeout']);

/** `redis://[user][:password]@host:port/db?prefix=toolgate&timeout=1000ms` (rediss:// for TLS). */
export function parseRedisDsn(dsn: string): RedisDsn {
  let u: URL;
  try { u = new URL(dsn); } catch { throw new RedisDsnError('invalid Redis DSN: use redis://[:PASSWORD@]HOST:PORT/DB or rediss://…'); }
  const display = `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new RedisDsnError(`invalid Redis DSN (${display}): the scheme must be redis: or rediss:`);
  if (!u.hostname) throw new RedisDsnError('invalid Redis DSN: it names no host');
  const db = u.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d{1,2}$/.test(db)) throw new RedisDsnError(`invalid Redis DSN (${display}): the path is the database number, e.g. /0`);
  for (const key of u.searchParams.keys()) {
    if (!KNOWN.has(key)) throw new RedisDsnError(`invalid Redis DSN (${display}): unknown parameter "${key}" (known: prefix, timeout)`);
  }
  const prefix = u.searchParams.get('prefix') ?? 'toolgate';
  if (!/^[\w.-]{1,64}$/.test(prefix)) throw new RedisDsnError(`invalid Redis DSN (${display}): prefix is 1-64 letters, digits, dot, dash or underscore`);
  const timeout = u.searchParams.get('timeout') ?? '1000ms';
  const m = /^(\d+)(ms|s)?$/.exec(timeout);
  const timeoutMs = m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : NaN;
  if (!(timeoutMs >= 10 && timeoutMs <= 60_000)) throw new RedisDsnError(`invalid Redis DSN (${display}): timeout is 10ms to 60s, e.g. timeout=500ms`);
  u.search = '';
  return { url: u.toString(), display, prefix, timeoutMs };
}
