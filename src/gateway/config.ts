import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { pointerOf, type PolicyIssue } from '../policy/check.js';
import { isJsonFile, parseWithSchema, type SchemaResult } from '../policy/load.js';

/**
 * toolgate.yaml (or the same in JSON). `${VAR}` reads the environment and `${file:PATH}` a file,
 * so credentials never need to be written inline; relative paths are relative to the file.
 */

const WebhookSchema = z.strictObject({
  url: z.url().describe('where a held call is POSTed'),
  secret: z.string().min(16, 'use at least 16 characters').describe('HMAC-SHA256 key for X-Toolgate-Signature; use ${VAR}'),
  format: z.enum(['json', 'slack']).default('json'),
});
const DURATION = z.string().regex(/^\d+(s|m|h)$/, 'a duration such as 90s, 15m or 1h').refine((d) => !/^0+\D/.test(d), 'a duration must be more than 0');

const ServerBase = {
  approvals: z.strictObject({ webhook: WebhookSchema.optional() }).optional().describe('how people hear of calls held for approval on this server'),
  policy: z.string().optional().describe('policy file; without it, the recommended policy for the server\'s tools'),
  auth: z.enum(['grants', 'none']).default('grants').describe('none: no credentials (local use, loopback only)'),
  audit_args: z.boolean().default(false).describe('store argument values (secrets masked) in the audit log, for replay'),
  fail_open: z.boolean().optional().describe('allow limited calls when the state store fails; default: the top-level fail_open'),
  call_timeout: z.string().regex(/^0*[1-9]\d*(s|m|h)$/, 'a positive duration such as 30s, 5m or 1h').default('5m')
    .describe('how long a forwarded tools/call may wait for its answer; progress from the server starts the wait again'),
};

export const ServerSchema = z.union([
  z.strictObject({
    ...ServerBase,
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().optional(),
  }),
  z.strictObject({
    ...ServerBase,
    url: z.url(),
    headers: z.record(z.string(), z.string()).default({}),
  }),
], { error: 'a server needs either command (with args, env, cwd) or url (with headers), and only known fields' });

const Duration = z.string().regex(/^\d+(s|m|h|d)$/, 'a duration like 30s, 15m, 1h or 30d');
const PublicUrl = z.url().optional().describe('the URL clients reach the gateway at (behind a proxy); default: from the Host header');

/** MCP authorization (OAuth 2.1): the gateway's own authorization server, or an external identity provider. */
export const OAuthSchema = z.union([
  z.strictObject({
    builtin: z.literal(true),
    public_url: PublicUrl,
    access_token_ttl: Duration.default('1h'),
    refresh_token_ttl: Duration.default('30d'),
    max_pending_clients: z.number().int().min(1).default(20).describe('registered clients not yet approved on the consent page'),
  }),
  z.strictObject({
    issuer: z.url(),
    audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe('accepted aud values; {server} stands for the server name, binding a token to one server'),
    public_url: PublicUrl,
    jwks_uri: z.url().optional().describe('default: from the issuer\'s discovery document'),
    algorithms: z.array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'])).min(1).default(['RS256', 'PS256', 'ES256', 'EdDSA']),
    label_claim: z.string().min(1).default('sub'),
    tags_claims: z.array(z.string().min(1)).default(['groups', 'roles']),
    clock_tolerance: Duration.default('30s'),
    jwks_cooldown: Duration.default('30s').describe('least time between two JWKS fetches for an unknown key id'),
  }),
], { error: 'oauth is either {builtin: true, …} or {issuer: https://…, audience: …, …}, with only known fields' });

export const GatewayConfigSchema = z.strictObject({
  listen: z.string().regex(/^(\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5}$/, 'HOST:PORT').default('127.0.0.1:8080'),
  state: z.string().optional().describe('memory:, sqlite:PATH or redis://…; default sqlite under TOOLGATE_HOME'),
  audit: z.string().optional().describe('audit log SQLite file; default TOOLGATE_HOME/audit.db'),
  fail_open: z.boolean().default(false).describe('every server\'s fail_open unless it sets its own: forward limited calls uncounted when the state store fails (default: deny them)'),
  admin: z.strictObject({ token: z.string().min(16, 'use at least 16 characters') }).optional(),
  sessions: z.strictObject({
    idle_timeout: DURATION.default('15m'),
    idle_timeout_unused: DURATION.default('2m').describe('sessions with no GET stream open that sent nothing this long are closed'),
    max: z.number().int().positive().default(100).describe('open sessions per server'),
    max_per_grant: z.number().int().positive().default(20).describe('open sessions per grant'),
    max_body: z.string().regex(/^\d+(kb|mb)$/i).default('4mb'),
  }).prefault({}),
  allowed_hosts: z.array(z.string().regex(/^(\[[0-9a-fA-F:]+\]|[\w.-]+)(:\d{1,5})?$/, 'a host name or address, optionally with :PORT')).default([])
    .describe('names and addresses clients reach this gateway by, besides loopback (Host and Origin checks)'),
  allowed_origins: z.array(z.string()).default([]),
  oauth: OAuthSchema.optional(),
  servers: z.record(z.string().regex(/^[A-Za-z0-9._-]+$/, 'server names are letters, digits, dot, dash and underscore'), ServerSchema).default({}),
});

export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
export type ServerConfig = z.output<typeof ServerSchema>;
export type OAuthConfig = z.output<typeof OAuthSchema>;

/** The server of this name, as an own property only (`__proto__` or `constructor` name none). */
export function serverNamed(config: GatewayConfig, name: string): ServerConfig | undefined {
  return Object.hasOwn(config.servers, name) ? config.servers[name] : undefined;
}

const REF = /\$\{(file:)?([^}]+)\}/g;

/**
 * Replaces ${VAR} and ${file:PATH} in every string. One that cannot be read is an issue, or —
 * when `unresolved` is given — noted there (as an issue about that place) and left empty.
 */
function substitute(value: unknown, at: (string | number)[], base: string, issues: PolicyIssue[], unresolved?: PolicyIssue[]): unknown {
  if (typeof value === 'string') {
    return value.replace(REF, (_, file: string | undefined, name: string) => {
      let problem: string | undefined;
      let out = '';
      if (file) {
        const path = isAbsolute(name) ? name : resolve(base, name);
        try { out = readFileSync(path, 'utf8').trim(); } catch { problem = `cannot read the file ${name}`; }
      } else if (!Object.hasOwn(process.env, name) || process.env[name] === undefined) problem = `the environment variable ${name} is not set`;
      else out = process.env[name]!;
      if (problem) (unresolved ?? issues).push({ pointer: pointerOf(at), message: problem });
      return out;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, [...at, i], base, issues, unresolved));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, [...at, k], base, issues, unresolved)]));
  }
  return value;
}

export interface ConfigOptions {
  /** Strict JSON (a .json file). */
  json?: boolean;
  /**
   * For commands that work on state: the admin section is skipped, and a ${VAR} or ${file:…} that
   * cannot be read is noted in `unresolved` instead of failing the load (a command that needs that
   * value, e.g. a server's env to start it, checks there).
   */
  forState?: boolean;
}

export type ConfigResult = SchemaResult<GatewayConfig> & { unresolved?: PolicyIssue[] };

export function parseGatewayConfig(text: string, base: string, options: ConfigOptions = {}): ConfigResult {
  const unresolved: PolicyIssue[] | undefined = options.forState ? [] : undefined;
  const prepare = (raw: unknown, issues: PolicyIssue[]) => {
    if (options.forState && raw && typeof raw === 'object' && !Array.isArray(raw)) raw = { ...raw, admin: undefined };
    return substitute(raw, [], base, issues, unresolved);
  };
  const result = parseWithSchema(text, GatewayConfigSchema, { json: options.json, prepare });
  if (!result.ok) {
    // A value left empty for want of its variable fails with the reason, not as "too short".
    const why = new Map((unresolved ?? []).map((u) => [u.pointer, u.message]));
    return { ok: false, issues: result.issues.map((i) => (why.has(i.pointer) ? { ...i, message: why.get(i.pointer)! } : i)) };
  }
  const c = result.value;
  const at = (p: string | undefined) => (p === undefined || isAbsolute(p) ? p : resolve(base, p));
  for (const s of Object.values(c.servers)) {
    s.policy = at(s.policy);
    if ('cwd' in s) s.cwd = at(s.cwd);
  }
  if (c.oauth && 'builtin' in c.oauth && !c.admin) {
    return { ok: false, issues: [{ pointer: '/oauth', message: 'the built-in authorization server needs admin.token: a person approves each client by signing in with it' }] };
  }
  if (c.state?.startsWith('sqlite:')) c.state = `sqlite:${at(c.state.slice('sqlite:'.length))}`;
  c.audit = at(c.audit);
  return { ...result, unresolved };
}

export function loadGatewayConfig(file: string, options: Omit<ConfigOptions, 'json'> = {}): ConfigResult {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) {
    return { ok: false, issues: [{ pointer: '', message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }] };
  }
  return parseGatewayConfig(text, dirname(resolve(file)), { ...options, json: isJsonFile(file) });
}

export function durationToMs(text: string): number {
  const m = /^(\d+)(s|m|h|d)$/.exec(text)!;
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's'];
}

export function sizeToBytes(text: string): number {
  const m = /^(\d+)(kb|mb)$/i.exec(text)!;
  return Number(m[1]) * (m[2].toLowerCase() === 'kb' ? 1024 : 1024 * 1024);
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
