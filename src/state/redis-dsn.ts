/** What a Redis state DSN says, with toolgate's own query parameters taken out. */
export interface RedisDsn {
  /** For ioredis: scheme, credentials, host, port and database number (single node). */
  url: string;
  /**
   * A Redis Cluster (`redis+cluster://` or `rediss+cluster://`): the seed nodes, credentials and
   * TLS for ioredis's Cluster. Absent for a single node.
   */
  cluster?: { nodes: { host: string; port: number }[]; username?: string; password?: string; tls: boolean };
  /** host:port/db (or the seed nodes), without credentials: the only form that reaches messages and logs. */
  display: string;
  /**
   * Every key and channel starts with `${prefix}:` (on a cluster `{${prefix}}:`, one hash tag, so
   * all of them share one slot), so several gateways (or fleets) can share one Redis.
   */
  prefix: string;
  /** The longest a command may take before the call it serves is decided without it. */
  timeoutMs: number;
  /**
   * What a Redis that may evict keys (maxmemory_policy other than noeviction) does to a gateway
   * that starts on it: `refuse` (default: exit 2) or `warn` (start, with a warning in the log).
   */
  eviction: 'refuse' | 'warn';
  /**
   * `wait=N`: a reservation counts only once N replicas have acknowledged it (Redis WAIT, at most
   * `timeoutMs` of `wait_timeout`); absent: replication stays asynchronous (Redis's default).
   */
  wait?: { replicas: number; timeoutMs: number };
}

export class RedisDsnError extends Error {}

const KNOWN = new Set(['prefix', 'timeout', 'eviction', 'wait', 'wait_timeout']);
// The credentials end at the last @ before the path, as in a URL (an unencoded @ in a password is
// the password's); the first @ left the rest of the password among the seed nodes, in the error.
const CLUSTER = /^(rediss?)\+cluster:\/\/(?:([^/?#]*)@)?([^/?#]*)(\/[^?#]*)?(\?[^#]*)?$/i;

/** A duration parameter: `250ms`, `2s` or a bare number of ms. */
function duration(value: string): number {
  const m = /^(\d+)(ms|s)?$/.exec(value);
  return m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : NaN;
}

/**
 * `redis://[user][:password]@host:port/db?prefix=toolgate&timeout=1000ms&eviction=refuse` (rediss://
 * for TLS), or a Redis Cluster: `redis+cluster://[user][:password]@host:port[,host:port…]?prefix=…`
 * (rediss+cluster:// for TLS; the hosts are seed nodes, the rest is found from them). Both take
 * `wait=N&wait_timeout=100ms`.
 */
export function parseRedisDsn(dsn: string): RedisDsn {
  const c = CLUSTER.exec(dsn);
  if (c) return parseClusterDsn(c);
  let u: URL;
  try { u = new URL(dsn); } catch { throw new RedisDsnError('invalid Redis DSN: use redis://[:PASSWORD@]HOST:PORT/DB, rediss://… or redis+cluster://HOST:PORT,HOST:PORT'); }
  const display = `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new RedisDsnError(`invalid Redis DSN (${display}): the scheme must be redis:, rediss:, redis+cluster: or rediss+cluster:`);
  if (!u.hostname) throw new RedisDsnError('invalid Redis DSN: it names no host');
  const db = u.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d{1,2}$/.test(db)) throw new RedisDsnError(`invalid Redis DSN (${display}): the path is the database number, e.g. /0`);
  const params = options(u.searchParams, display);
  u.search = '';
  return { url: u.toString(), display, ...params };
}

function parseClusterDsn([, scheme, userinfo, hosts, path, query]: RegExpExecArray): RedisDsn {
  const tls = scheme.toLowerCase() === 'rediss';
  const nodes: { host: string; port: number }[] = [];
  // A DSN with an @ anywhere may have a password where a seed node was expected (one with an
  // unencoded / ? or #, which ends the credentials early): a bad seed is then named by its place only.
  const credentials = (userinfo ?? '') !== '' || (path ?? '').includes('@') || (query ?? '').includes('@');
  for (const [i, seed] of hosts.split(',').entries()) {
    let u: URL | undefined;
    try { u = new URL(`redis://${seed}`); } catch { /* below */ }
    const named = credentials ? `seed node ${i + 1}` : `"${seed}"`;
    if (!u || !u.hostname || u.username || u.pathname !== '') throw new RedisDsnError(`invalid Redis Cluster DSN: ${named} is not HOST:PORT (seed nodes are separated by commas; a password's @ / ? # are written %40 %2F %3F %23)`);
    nodes.push({ host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(u.port || 6379) });
  }
  const display = `${scheme.toLowerCase()}+cluster://${nodes.map((n) => `${n.host.includes(':') ? `[${n.host}]` : n.host}:${n.port}`).join(',')}`;
  if (path && path !== '/' && path !== '/0') throw new RedisDsnError(`invalid Redis DSN (${display}): a cluster has only database 0 (leave the path out)`);
  const params = options(new URLSearchParams(query ?? ''), display);
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo) {
    const colon = userinfo.indexOf(':');
    const decode = (s: string) => { try { return decodeURIComponent(s); } catch { throw new RedisDsnError(`invalid Redis DSN (${display}): the credentials are not percent-encoded properly`); } };
    username = decode(colon < 0 ? userinfo : userinfo.slice(0, colon)) || undefined;
    password = colon < 0 ? undefined : decode(userinfo.slice(colon + 1)) || undefined;
  }
  return { url: '', cluster: { nodes, username, password, tls }, display, ...params };
}

function options(q: URLSearchParams, display: string): Pick<RedisDsn, 'prefix' | 'timeoutMs' | 'eviction' | 'wait'> {
  for (const key of q.keys()) {
    if (!KNOWN.has(key)) throw new RedisDsnError(`invalid Redis DSN (${display}): unknown parameter "${key}" (known: prefix, timeout, eviction, wait, wait_timeout)`);
  }
  const prefix = q.get('prefix') ?? 'toolgate';
  if (!/^[\w.-]{1,64}$/.test(prefix)) throw new RedisDsnError(`invalid Redis DSN (${display}): prefix is 1-64 letters, digits, dot, dash or underscore`);
  const timeoutMs = duration(q.get('timeout') ?? '1000ms');
  if (!(timeoutMs >= 10 && timeoutMs <= 60_000)) throw new RedisDsnError(`invalid Redis DSN (${display}): timeout is 10ms to 60s, e.g. timeout=500ms`);
  const eviction = q.get('eviction') ?? 'refuse';
  if (eviction !== 'refuse' && eviction !== 'warn') throw new RedisDsnError(`invalid Redis DSN (${display}): eviction is refuse (the default) or warn`);
  const replicas = Number(q.get('wait') ?? '0');
  if (!Number.isInteger(replicas) || replicas < 0 || replicas > 16) throw new RedisDsnError(`invalid Redis DSN (${display}): wait is the number of replicas (0-16) that must acknowledge a reservation, e.g. wait=1`);
  const waitText = q.get('wait_timeout');
  if (waitText !== null && replicas === 0) throw new RedisDsnError(`invalid Redis DSN (${display}): wait_timeout needs wait=N`);
  const waitMs = duration(waitText ?? `${Math.min(100, Math.floor(timeoutMs / 2))}ms`);
  if (!(waitMs >= 1 && waitMs < timeoutMs)) throw new RedisDsnError(`invalid Redis DSN (${display}): wait_timeout is 1ms up to less than timeout (${timeoutMs} ms), e.g. wait_timeout=100ms`);
  return { prefix, timeoutMs, eviction, ...(replicas > 0 ? { wait: { replicas, timeoutMs: waitMs } } : {}) };
}

/** Whether a state DSN names Redis (a single node or a cluster). */
export function isRedisDsn(dsn: string): boolean {
  return /^rediss?(\+cluster)?:\/\//.test(dsn);
}

/** The password in a Redis DSN as written (percent-encoded), or '' (for masking it wherever it could show). */
export function redisDsnPassword(dsn: string): string {
  const c = CLUSTER.exec(dsn);
  if (c) {
    const colon = (c[2] ?? '').indexOf(':');
    return colon < 0 ? '' : c[2].slice(colon + 1);
  }
  try { return new URL(dsn).password; } catch { return ''; }
}
