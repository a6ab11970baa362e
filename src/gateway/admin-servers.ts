import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { AuditLog } from '../audit/index.js';
import { Catalog, recordSummary } from '../risk/catalog.js';
import { buildRecord, type ServerRecord } from '../risk/record.js';
import { toolFingerprint } from '../risk/source.js';
import { toolgateHome, type StateStore } from '../state/index.js';
import { AdminError, own, send, since } from './admin-http.js';
import type { GatewayConfig, ServerConfig } from './config.js';
import type { Listings } from './listings.js';

export interface ServerDeps {
  config(): GatewayConfig;
  state: StateStore;
  audit: AuditLog;
  listings: Listings;
  sessions(server: string): number;
}

const catalog = () => new Catalog(join(toolgateHome(), 'catalog'));

/** The values of a server's configured credentials (env, headers, and a bearer's token alone). */
function credentialsOf(server: ServerConfig): string[] {
  const values = Object.values('command' in server ? server.env : server.headers);
  return values.flatMap((v) => [v, ...v.split(/\s+/)]).filter((v) => v.length >= 6);
}

/** A record as the admin API shows it: no configured credential survives, wherever a server echoed it. */
function scrubbed<T>(value: T, server: ServerConfig): T {
  let text = JSON.stringify(value);
  for (const secret of credentialsOf(server).sort((a, b) => b.length - a.length)) text = text.split(JSON.stringify(secret).slice(1, -1)).join('[credential]');
  return JSON.parse(text) as T;
}

async function recordOf(deps: ServerDeps, name: string, server: ServerConfig, refresh: boolean): Promise<ServerRecord> {
  let listing;
  try { listing = await deps.listings.get(name, server, refresh); } catch (err) { throw new AdminError(502, `cannot list the tools of "${name}": ${(err as Error).message}`); }
  const record = scrubbed(buildRecord(listing, await deps.state.pins.get(name)), server);
  try { catalog().save(record); } catch { /* the catalog is a convenience; the record is still shown */ }
  return record;
}

/** Pins against what the server lists now: changed, new and gone tools. */
async function pinReview(deps: ServerDeps, name: string, record: ServerRecord) {
  const pins = await deps.state.pins.get(name);
  const current = new Map(record.tools.map((t) => [t.name, t.fingerprint]));
  if (!pins) return { state: 'unpinned', changed: [], added: [], removed: [] };
  const changed = [...current].filter(([n, fp]) => Object.hasOwn(pins, n) && pins[n] !== fp).map(([n]) => n);
  const added = [...current.keys()].filter((n) => !Object.hasOwn(pins, n));
  const removed = Object.keys(pins).filter((n) => !current.has(n));
  return { state: changed.length + added.length + removed.length ? 'changed' : 'pinned', changed, added, removed };
}

/**
 * /api/servers/<name> (the server's record summary, pins, sessions and traffic),
 * /api/servers/<name>/record, /api/servers/<name>/pins (POST accepts what was reviewed),
 * /api/records/<slug> (a catalog record), /api/traffic, /api/audit/verify and /api/audit/stream.
 */
export async function handleServers(req: IncomingMessage, res: ServerResponse, url: URL, path: string, input: Record<string, unknown>, deps: ServerDeps): Promise<boolean> {
  const method = req.method ?? 'GET';
  const q = url.searchParams;
  const m = /^\/api\/servers\/([^/]+)(\/record|\/pins)?$/.exec(path);
  if (m) {
    const name = decodeURIComponent(m[1]);
    const server = own(deps.config().servers, name);
    if (!server) throw new AdminError(404, `no server named "${name}"`);
    if (m[2] === '/record' && method === 'GET') {
      send(res, 200, await recordOf(deps, name, server, q.get('refresh') === '1'));
      return true;
    }
    if (m[2] === '/pins' && method === 'POST') {
      if (typeof input.fingerprint !== 'string') throw new AdminError(400, 'send {"fingerprint": "<the server fingerprint you reviewed>"}');
      const listing = await deps.listings.get(name, server, true);
      const record = buildRecord(listing, null);
      if (record.identity.fingerprint !== input.fingerprint) throw new AdminError(409, 'the server\'s tools changed again since you reviewed them: review them again');
      await deps.state.pins.set(name, Object.fromEntries(listing.tools.map((t) => [t.name, toolFingerprint(t)])));
      deps.audit.append({ kind: 'pin', server: name, message: `pins accepted for ${listing.tools.length} tools (fingerprint ${record.identity.fingerprint.slice(0, 16)})` });
      send(res, 200, { pinned: listing.tools.length, fingerprint: record.identity.fingerprint });
      return true;
    }
    if (!m[2] && method === 'GET') {
      const record = await recordOf(deps, name, server, q.get('refresh') === '1');
      const killed = await deps.state.flags.killedFor(name);
      const minute = deps.audit.traffic(60_000, 60_000, name).reduce((a, b) => ({ calls: a.calls + b.calls, denied: a.denied + b.denied, held: a.held + b.held }), { calls: 0, denied: 0, held: 0 });
      send(res, 200, {
        name, kind: 'url' in server ? 'url' : 'command', auth: server.auth, policy: server.policy ?? '(recommended)', sessions: deps.sessions(name),
        killed, lastMinute: minute, slug: Catalog.slug(record), summary: recordSummary(record), posture: record.auth, pins: await pinReview(deps, name, record),
        fingerprint: record.identity.fingerprint,
      });
      return true;
    }
  }
  const rec = /^\/api\/records\/([^/]+)$/.exec(path);
  if (rec && method === 'GET') {
    const record = catalog().find(decodeURIComponent(rec[1]));
    if (!record) throw new AdminError(404, `no record named "${decodeURIComponent(rec[1])}" in the catalog`);
    send(res, 200, record);
    return true;
  }
  if (path === '/api/traffic' && method === 'GET') {
    const span = since(q.get('since')) ?? 3_600_000;
    const bucket = since(q.get('bucket')) ?? 60_000;
    if (span / bucket > 1440) throw new AdminError(400, 'at most 1440 buckets: widen the bucket or shorten since');
    send(res, 200, deps.audit.traffic(span, bucket, q.get('server') ?? undefined));
    return true;
  }
  if (path === '/api/audit/verify' && method === 'GET') {
    send(res, 200, deps.audit.verify());
    return true;
  }
  if (path === '/api/audit/stream' && method === 'GET') {
    stream(res, q, deps.audit);
    return true;
  }
  return false;
}

const FILTERS = [['server', 'server'], ['grant', 'grant_label'], ['tool', 'tool'], ['decision', 'decision']] as const;

/** Server-sent events: every audit event of this process as it is appended (a row of /api/audit before it is stored), optionally filtered. */
function stream(res: ServerResponse, q: URLSearchParams, audit: AuditLog): void {
  const want = FILTERS.flatMap(([param, field]) => (q.get(param) ? [[field, q.get(param)!] as const] : []));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write('retry: 2000\n\n');
  const stop = audit.subscribe((e) => {
    if (want.every(([field, value]) => e[field] === value)) res.write(`data: ${JSON.stringify(e)}\n\n`);
  });
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  keepAlive.unref();
  res.on('close', () => { stop(); clearInterval(keepAlive); });
}
