import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { AuditLog } from '../audit/index.js';
import { toolVerdict, type CompiledPolicy } from '../engine/index.js';
import { Catalog, recordSummary, storablePinKeys } from '../risk/catalog.js';
import { buildRecord, type ServerRecord } from '../risk/record.js';
import { pinKey, readPins, serverIdentity } from '../risk/identity.js';
import { toolFingerprint, type Listing } from '../risk/source.js';
import { maskArgs, maskUrl, maskUrlsIn } from '../secrets/credentials.js';
import { toolgateHome, type StateStore } from '../state/index.js';
import { AdminError, own, send, since } from './admin-http.js';
import type { GatewayConfig, ServerConfig } from '../config/gateway.js';
import { sourceOf, type Listings } from './listings.js';

export interface ServerDeps {
  config(): GatewayConfig;
  state: StateStore;
  audit: AuditLog;
  listings: Listings;
  sessions(server: string): number;
  /** Why the latest version of a policy file was refused (the previous one still decides), when it was. */
  policyProblem?(file: string): { problem: string; since: string } | undefined;
  /** The version of a policy file that decides calls now (the last one that loaded). */
  policyInForce?(file: string): CompiledPolicy | undefined;
}

/** What the server's configured policy does to each tool it lists (the record's own verdicts are the recommended policy's). */
function configuredVerdicts(deps: ServerDeps, server: ServerConfig, record: ServerRecord) {
  if (!server.policy) return null;
  const policy = deps.policyInForce?.(server.policy);
  if (!policy) return { file: server.policy, tools: [] };
  // A tool with hide-level poisoning findings is hidden under poisoned: hide, whatever its entry says (src/poison).
  const poisonedHidden = (t: ServerRecord['tools'][number]) => policy.poisonedFor(t.name) === 'hide' && (t.poisoning ?? []).some((f) => f.level === 'hide');
  return { file: server.policy, tools: record.tools.map((t) => ({ tool: t.name, ...(poisonedHidden(t) ? { verdict: 'Hidden' as const, rule: '(poisoned)', conditional: false } : toolVerdict(policy, t.name)) })) };
}

const catalog = () => new Catalog(join(toolgateHome(), 'catalog'));

/**
 * The values of a server's configured credentials: env, env_inherit, headers (and a bearer's token
 * alone), and those its args or URL carry (a URL's password and query values, `--api-key=…`).
 */
function credentialsOf(server: ServerConfig): string[] {
  const inherited = 'command' in server ? server.env_inherit.flatMap((n) => process.env[n] ?? []) : [];
  const carried = 'command' in server ? maskArgs(server.args).found : maskUrl(server.url).found;
  const values = [...Object.values('command' in server ? server.env : server.headers), ...inherited, ...carried];
  return values.flatMap((v) => [v, ...v.split(/\s+/)]).filter((v) => v.length >= 6);
}

/** A record as the admin API shows it: no configured credential survives, wherever a server echoed it. */
function scrubbed<T>(value: T, server: ServerConfig): T {
  let text = JSON.stringify(value);
  for (const secret of credentialsOf(server).sort((a, b) => b.length - a.length)) text = text.split(JSON.stringify(secret).slice(1, -1)).join('[credential]');
  return JSON.parse(text) as T;
}

/** Where the server's pins are kept: what it is (package or script, declared name); before that, under its gateway name. */
function keyOf(server: ServerConfig, listing: Listing): string {
  return pinKey(serverIdentity(sourceOf(server)), listing.serverInfo.name);
}

async function pinsOf(deps: ServerDeps, name: string, server: ServerConfig, listing: Listing): Promise<Record<string, string> | null> {
  return (await readPins(deps.state.pins, keyOf(server, listing), [serverIdentity(sourceOf(server)).what, name])).pins;
}

async function recordOf(deps: ServerDeps, name: string, server: ServerConfig, refresh: boolean): Promise<ServerRecord> {
  let listing;
  try {
    listing = await deps.listings.get(name, server, refresh);
  } catch (err) {
    throw new AdminError(502, scrubbed(`cannot list the tools of "${name}": ${maskUrlsIn((err as Error).message)}`, server));
  }
  const record = scrubbed(buildRecord(listing, await pinsOf(deps, name, server, listing)), server);
  const what = serverIdentity(sourceOf(server)).what;
  record.identity.pinKeys = storablePinKeys(sourceOf(server), what, [keyOf(server, listing), what, name]);
  try { catalog().save(record); } catch { /* the catalog is a convenience; the record is still shown */ }
  return record;
}

/** Pins against what the server lists now: changed, new and gone tools. */
async function pinReview(deps: ServerDeps, name: string, server: ServerConfig, record: ServerRecord) {
  const pins = await pinsOf(deps, name, server, await deps.listings.get(name, server));
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
      const record = await recordOf(deps, name, server, q.get('refresh') === '1');
      send(res, 200, { ...record, configured: configuredVerdicts(deps, server, record) });
      return true;
    }
    if (m[2] === '/pins' && method === 'POST') {
      if (typeof input.fingerprint !== 'string') throw new AdminError(400, 'send {"fingerprint": "<the server fingerprint you reviewed>"}');
      const listing = await deps.listings.get(name, server, true);
      const record = buildRecord(listing, null);
      if (record.identity.fingerprint !== input.fingerprint) throw new AdminError(409, 'the server\'s tools changed again since you reviewed them: review them again');
      const fingerprints = Object.fromEntries(listing.tools.map((t) => [t.name, toolFingerprint(t)]));
      // Under the identity alone too: a server that declares another name is still checked against them.
      for (const key of new Set([keyOf(server, listing), serverIdentity(sourceOf(server)).what])) await deps.state.pins.set(key, fingerprints);
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
        policyProblem: (server.policy && deps.policyProblem?.(server.policy)) || null, killed, lastMinute: minute, slug: Catalog.slug(record), summary: recordSummary(record), posture: record.auth, pins: await pinReview(deps, name, server, record),
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
