import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Approvals } from '../approvals/index.js';
import { loadPolicyFile } from '../policy/index.js';
import { Catalog, recordSummary } from '../risk/catalog.js';
import { toolgateHome, type StateStore } from '../state/index.js';
import { AdminError, own, send, since } from './admin-http.js';
import { handlePolicies, type PolicyDeps } from './admin-policies.js';
import { handleServers, type ServerDeps } from './admin-servers.js';
import type { GatewayConfig } from '../config/gateway.js';
import { ApprovalApiError, handleApprovalsApi, type AuthenticatedAs } from './approvals-api.js';
import type { Grants } from '../grants/grants.js';

export interface AdminDeps extends PolicyDeps, ServerDeps {
  state: StateStore;
  grants: Grants;
  approvals: Approvals;
  /** How the request authenticated: the admin token or the dashboard's session (the channel its decisions are recorded under). */
  authenticatedAs?: AuthenticatedAs;
}

export { AdminError };

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** True when the request carries the admin token (compared in constant time). */
export function isAdmin(req: IncomingMessage, config: GatewayConfig): boolean {
  const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  return !!config.admin && !!token && sameSecret(token, config.admin.token);
}

/** The admin JSON API: servers, grants, audit, kill switch, policies, records. */
export async function handleAdmin(req: IncomingMessage, res: ServerResponse, url: URL, body: unknown, deps: AdminDeps): Promise<void> {
  const path = url.pathname.replace(/\/+$/, '');
  const method = req.method ?? 'GET';
  const q = url.searchParams;
  const input = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;

  if (path === '/api/servers' && method === 'GET') {
    return send(res, 200, Object.entries(deps.config().servers).map(([name, s]) => ({
      name, kind: 'url' in s ? 'url' : 'command', auth: s.auth, policy: s.policy ?? '(recommended)', sessions: deps.sessions(name),
      policyProblem: (s.policy && deps.policyProblem?.(s.policy)) || null,
    })));
  }
  if (path === '/api/grants' && method === 'GET') return send(res, 200, await deps.grants.list());
  if (path === '/api/grants' && method === 'POST') {
    // A multi-server grant: "servers": ["a", "b"] (with or without "server", which comes first).
    if (input.servers !== undefined && !(Array.isArray(input.servers) && input.servers.length > 0 && input.servers.every((x: unknown) => typeof x === 'string'))) throw new AdminError(400, '"servers" must be a non-empty list of server names');
    const servers = [...(typeof input.server === 'string' ? [input.server] : []), ...((input.servers as string[] | undefined) ?? [])];
    if (servers.length === 0 || typeof input.label !== 'string' || !input.label.trim()) throw new AdminError(400, 'a grant needs "server" (or "servers") and a "label" string');
    for (const name of servers) if (!own(deps.config().servers, name)) throw new AdminError(400, `no server named "${name}"`);
    const tags = Array.isArray(input.tags) ? input.tags.map(String) : [];
    const expiresInMs = typeof input.expires === 'string' ? since(input.expires) : undefined;
    if (expiresInMs === 0) throw new AdminError(400, 'expires takes a duration above 0, such as 30d or 12h');
    const { grant, token } = await deps.grants.create({ server: servers[0], servers: servers.slice(1), label: input.label, tags, policy: typeof input.policy === 'string' ? input.policy : undefined, expiresInMs });
    deps.audit.append({ kind: 'grant', server: grant.server, grant: grant.label, message: `created ${grant.id} (api)` });
    return send(res, 201, { ...grant, token });
  }
  const grantPath = /^\/api\/grants\/([^/]+)(\/rotate)?$/.exec(path);
  if (grantPath) {
    let id: string;
    try { id = decodeURIComponent(grantPath[1]); } catch { throw new AdminError(400, 'malformed percent-encoding in the path'); }
    try {
      if (grantPath[2] && method === 'POST') {
        const { grant, token } = await deps.grants.rotate(id);
        deps.audit.append({ kind: 'grant', server: grant.server, grant: grant.label, message: `rotated ${grant.id} (api)` });
        return send(res, 200, { ...grant, token });
      }
      if (!grantPath[2] && method === 'DELETE') {
        const grant = await deps.grants.revoke(id);
        deps.audit.append({ kind: 'grant', server: grant.server, grant: grant.label, message: `revoked ${grant.id} (api)` });
        return send(res, 200, grant);
      }
    } catch (err) {
      throw new AdminError(404, (err as Error).message);
    }
  }
  if (path === '/api/audit' && method === 'GET') {
    const limit = Number(q.get('limit') ?? 100);
    if (!Number.isInteger(limit) || limit <= 0 || limit > 10_000) throw new AdminError(400, 'limit takes a whole number from 1 to 10000');
    return send(res, 200, deps.audit.query({
      sinceMs: since(q.get('since')), decision: q.get('decision') ?? undefined, tool: q.get('tool') ?? undefined, server: q.get('server') ?? undefined,
      grant: q.get('grant') ?? undefined, session: q.get('session') ?? undefined, client: q.get('client') ?? undefined, instance: q.get('instance') ?? undefined, limit,
    }));
  }
  if (path === '/api/kill-switch' && method === 'GET') return send(res, 200, await deps.state.flags.listKillSwitches());
  if (path === '/api/kill-switch' && method === 'POST') {
    if (typeof input.on !== 'boolean') throw new AdminError(400, 'send {"on": true|false, "server"?: name, "reason"?: text}');
    const scope = typeof input.server === 'string' ? input.server : '*';
    await deps.state.flags.setKillSwitch(scope, input.on, typeof input.reason === 'string' ? input.reason : undefined);
    deps.audit.append({ kind: 'kill_switch', server: scope === '*' ? undefined : scope, message: `${input.on ? 'on' : 'off'} (api)${typeof input.reason === 'string' ? `: ${input.reason}` : ''}` });
    return send(res, 200, await deps.state.flags.listKillSwitches());
  }
  if (path === '/api/policies' && method === 'GET') {
    return send(res, 200, Object.entries(deps.config().servers).map(([name, s]) => {
      if (!s.policy) return { server: name, policy: '(recommended)', valid: true };
      const loaded = loadPolicyFile(s.policy);
      return loaded.ok ? { server: name, policy: s.policy, valid: true, hash: loaded.hash } : { server: name, policy: s.policy, valid: false, errors: loaded.issues };
    }));
  }
  if (path === '/api/records' && method === 'GET') {
    const text = q.get('search') ?? '';
    const needle = text.toLowerCase();
    // Each record with the tools whose names match, so a search for a tool name shows its breakdown.
    return send(res, 200, (await new Catalog(join(toolgateHome(), 'catalog')).searchVerified(text, deps.state.pins)).map((r) => ({
      slug: Catalog.slug(r), ...recordSummary(r),
      matches: needle ? r.tools.filter((t) => t.name.toLowerCase().includes(needle)).map((t) => ({ name: t.name, category: t.classification.category, risk: t.classification.risk, verdict: t.verdict })) : [],
    })));
  }
  if (await handleServers(req, res, url, path, input, deps)) return;
  if (path.startsWith('/api/policies/') && await handlePolicies(res, path, method, input, deps)) return;
  try {
    if (path === '/api/approvals' || path.startsWith('/api/approvals/')) {
      if (await handleApprovalsApi(req, res, path, url, input, deps.approvals, deps.authenticatedAs)) return;
    }
  } catch (err) {
    if (err instanceof ApprovalApiError) throw new AdminError(err.status, err.message);
    throw err;
  }
  throw new AdminError(404, `no such admin endpoint: ${method} ${url.pathname}`);
}
