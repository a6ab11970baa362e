import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import type { AuditLog } from '../audit/index.js';
import { replay } from '../audit/replay.js';
import { CompiledPolicy, toolVerdict } from '../engine/index.js';
import { formatIssue, parsePolicyText, type LoadResult, type PolicyIssue } from '../policy/index.js';
import { classifyTools, recommendPolicy } from '../risk/index.js';
import { compileObject } from '../proxy/recommended.js';
import { AdminError, own, send } from './admin-http.js';
import type { GatewayConfig, ServerConfig } from '../config/gateway.js';
import type { Listings } from './listings.js';

export interface PolicyDeps {
  config(): GatewayConfig;
  audit: AuditLog;
  listings: Listings;
  /** A saved policy file takes effect at once in every live session that uses it. */
  applyPolicy(file: string, result: Extract<LoadResult, { ok: true }>): void;
}

const DAY_MS = 86_400_000;

/** Issues as `toolgate policy validate FILE` prints them, with their pointer and position kept apart for the editor. */
function described(file: string, issues: PolicyIssue[]) {
  return issues.map((issue) => ({ ...issue, text: formatIssue(file, issue) }));
}

function draftOf(input: Record<string, unknown>): string {
  if (typeof input.text !== 'string') throw new AdminError(400, 'send {"text": "<the policy as JSON or YAML>"}');
  return input.text;
}

function serverNamed(deps: PolicyDeps, name: string): ServerConfig {
  const server = own(deps.config().servers, name);
  if (!server) throw new AdminError(404, `no server named "${name}"`);
  return server;
}

/** Every tool the server lists, with what the policy (the file's, or the recommended one) does to it. */
async function verdicts(deps: PolicyDeps, name: string, server: ServerConfig, policy: CompiledPolicy | null) {
  try {
    const listing = await deps.listings.get(name, server);
    const effective = policy ?? compileObject(recommendPolicy(classifyTools(listing.tools, { name, instructions: listing.instructions ?? undefined }), listing.tools, name));
    return { tools: listing.tools.map((t) => ({ tool: t.name, ...toolVerdict(effective, t.name) })), recommended: policy ? undefined : effective.policy };
  } catch (err) {
    return { tools: [], error: `cannot list the server's tools: ${(err as Error).message}` };
  }
}

/**
 * /api/policies/<server> (GET: the file, its issues and every tool's verdict; PUT: validate, write,
 * apply), /api/policies/validate and /api/policies/<server>/replay (the last day of audited calls
 * decided again under a draft). Returns false when the path is not one of these.
 */
export async function handlePolicies(res: ServerResponse, path: string, method: string, input: Record<string, unknown>, deps: PolicyDeps): Promise<boolean> {
  if (path === '/api/policies/validate' && method === 'POST') {
    const file = typeof input.file === 'string' ? input.file : 'draft';
    const result = parsePolicyText(draftOf(input));
    send(res, 200, result.ok ? { valid: true, hash: result.hash, issues: [] } : { valid: false, issues: described(file, result.issues) });
    return true;
  }
  const m = /^\/api\/policies\/([^/]+)(\/replay)?$/.exec(path);
  if (!m) return false;
  const name = decodeURIComponent(m[1]);
  const server = serverNamed(deps, name);
  const file = server.policy;
  if (m[2]) {
    if (method !== 'POST') throw new AdminError(405, 'replay with POST {"text"}');
    const result = parsePolicyText(draftOf(input));
    if (!result.ok) {
      send(res, 400, { valid: false, issues: described(file ?? 'draft', result.issues) });
      return true;
    }
    const rows = deps.audit.query({ server: name, kind: 'call', sinceMs: DAY_MS, limit: 10_000 });
    const changes = await replay(rows, result.policy, result.hash);
    send(res, 200, { valid: true, considered: rows.filter((r) => r.tool).length, changes: changes.slice(-500), more: Math.max(0, changes.length - 500) });
    return true;
  }
  if (method === 'GET') {
    if (!file) {
      send(res, 200, { server: name, file: null, editable: false, valid: true, ...(await verdicts(deps, name, server, null)) });
      return true;
    }
    let text = '';
    try { text = readFileSync(file, 'utf8'); } catch (err) { throw new AdminError(500, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code}`); }
    const result = parsePolicyText(text);
    const policy = result.ok ? new CompiledPolicy(result.policy, result.hash) : null;
    send(res, 200, {
      server: name, file, editable: true, text, valid: result.ok,
      ...(result.ok ? { hash: result.hash } : { issues: described(file, result.issues) }),
      ...(policy ? await verdicts(deps, name, server, policy) : { tools: [] }),
    });
    return true;
  }
  if (method === 'PUT') {
    if (!file) throw new AdminError(409, `server "${name}" runs under the recommended policy: give it a policy file in the configuration (policy: FILE) to edit it here`);
    const text = draftOf(input);
    const result = parsePolicyText(text);
    if (!result.ok) {
      send(res, 400, { saved: false, valid: false, issues: described(file, result.issues) });
      return true;
    }
    // Written beside the file and renamed over it: a reader never sees half a policy.
    const tmp = `${file}.toolgate-${process.pid}.tmp`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
    deps.applyPolicy(file, result);
    send(res, 200, { saved: true, valid: true, file, hash: result.hash });
    return true;
  }
  throw new AdminError(405, `${method} is not supported on ${path}`);
}
