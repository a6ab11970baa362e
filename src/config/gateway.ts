import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { pointerOf, type PolicyIssue } from '../policy/check.js';
import { isJsonFile, parseWithSchema, type SchemaResult } from '../policy/load.js';
import { passthroughProblem } from '../proxy/methods.js';
import { isAddressOrCidr } from '../http/client-address.js';
import { TelemetrySchema } from '../telemetry/settings.js';

/**
 * toolgate.yaml (or the same in JSON). `${VAR}` reads the environment and `${file:PATH}` a file,
 * so credentials never need to be written inline; relative paths are relative to the file.
 */

const WebhookSchema = z.strictObject({
  url: z.url().describe('where a held call is POSTed'),
  secret: z.string().min(16, 'use at least 16 characters').describe('HMAC-SHA256 key for X-Toolgate-Signature; use ${VAR}'),
  format: z.enum(['json', 'slack']).default('json'),
});
const DURATION = z.string({ error: 'a duration such as 90s, 15m or 1h' }).regex(/^\d+(s|m|h)$/, 'a duration such as 90s, 15m or 1h').refine((d) => !/^0+\D/.test(d), 'a duration must be more than 0');

/** An enum whose wrong value is reported at its own path (a plain z.enum inside the server union reports only "a server needs …"). */
const oneOf = <T extends string>(values: readonly T[]) =>
  z.string().refine((v) => (values as readonly string[]).includes(v), `must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`) as unknown as z.ZodType<T>;

/**
 * Requests one pooled upstream session carries at once by default (pool.concurrency): 4 turns the
 * default 8 sessions of a pool into 32 requests in flight without any one server process handling
 * more than a few at a time (a server that does its work on one thread serves them in turn, as the
 * pool's queue would); 1 where legacy clients are pooled (they may be asked the server's questions).
 */
export const POOL_CONCURRENCY = 4;

/**
 * Upstream sessions pooled per server (SPEC 10; issue 26): a request leases one for its whole life.
 * `share: server` declares the server keeps no per-client state: only then do grants share its
 * upstream sessions, and only then may legacy clients be pooled too (`clients: all`).
 */
export const PoolSchema = z.strictObject({
  size: z.number().int().min(0).default(1).describe('upstream sessions kept open (once started) when idle'),
  max: z.number().int().min(1).max(1024).default(8).describe('upstream sessions at most, per pool (per grant with share: grant)'),
  idle_timeout: DURATION.default('5m').describe('idle upstream sessions beyond size are closed after this long'),
  queue_timeout: DURATION.default('10s').describe('how long a request waits for a free upstream session before the retryable pool-exhausted error; also how long a request cancelled on a session shared by several requests (concurrency > 1) keeps its place while the server has not answered it'),
  queue_max: z.number().int().min(0).default(1000).describe('requests waiting at most, per pool; past it the pool-exhausted error at once'),
  share: oneOf(['grant', 'server']).default('grant').describe('grant: one pool per grant; server: one pool for all grants (only for servers that keep no per-client state)'),
  clients: oneOf(['modern', 'all']).default('modern').describe('modern: only 2026-07-28 clients are pooled; all: legacy sessions too (needs share: server)'),
  max_per_grant: z.number().int().min(1).max(1024).optional().describe('with share: server, the upstream sessions one grant may lease at once (default: half of max, rounded up), so that no grant holds the whole pool'),
  concurrency: z.number().int().min(1).max(64).optional()
    .describe(`requests one upstream session carries at once (default: ${POOL_CONCURRENCY} with clients: modern, 1 with clients: all); 1: one request per session, as before`),
}).superRefine((p, ctx) => {
  if (p.size > p.max && p.max >= 1) ctx.addIssue({ code: 'custom', path: ['size'], message: `size (${p.size}) may not exceed max (${p.max})` });
  if (p.max_per_grant !== undefined && p.max_per_grant > p.max) ctx.addIssue({ code: 'custom', path: ['max_per_grant'], message: `max_per_grant (${p.max_per_grant}) may not exceed max (${p.max})` });
  if (p.clients === 'all' && p.share !== 'server') {
    ctx.addIssue({ code: 'custom', path: ['clients'], message: 'clients: all needs share: server: a legacy session relies on its upstream session\'s state, which only a server declared stateless (share: server) can do without' });
  }
  if (p.clients === 'all' && p.concurrency !== undefined && p.concurrency > 1) {
    ctx.addIssue({ code: 'custom', path: ['concurrency'], message: `concurrency (${p.concurrency}) needs clients: modern: a pooled 2025 client may be asked the server's questions (sampling, elicitation, roots) during its call, and on a session carrying several requests at once nothing says whose call a question belongs to` });
  }
});
export function poolConcurrency(p: PoolConfig): number {
  return p.concurrency ?? (p.clients === 'all' ? 1 : POOL_CONCURRENCY);
}
export type PoolConfig = z.output<typeof PoolSchema>;

const ServerBase = {
  pool: PoolSchema.prefault({}).describe('how upstream sessions are pooled; default: 2026-07-28 clients share up to 8 per grant'),
  approvals: z.strictObject({ webhook: WebhookSchema.optional() }).optional().describe('how people hear of calls held for approval on this server'),
  policy: z.string().optional().describe('policy file; without it, the recommended policy for the server\'s tools'),
  auth: z.enum(['grants', 'none']).default('grants').describe('none: no credentials (local use, loopback only)'),
  audit_args: z.boolean().default(false).describe('store argument values (secrets masked) in the audit log, for replay'),
  fail_open: z.boolean().optional().describe('allow limited calls when the state store fails; default: the top-level fail_open'),
  call_timeout: z.string({ error: 'a positive duration such as 30s, 5m or 1h' }).regex(/^0*[1-9]\d*(s|m|h)$/, 'a positive duration such as 30s, 5m or 1h').default('5m')
    .describe('how long a forwarded tools/call may wait for its answer; progress from the server starts the wait again'),
  protocol: z.enum(['auto', 'legacy', '2026-07-28']).default('auto')
    .describe('the MCP era toolgate speaks to the server: auto tries 2026-07-28 (server/discover) and falls back to the 2025 revisions; legacy or 2026-07-28 speak only that one'),
  passthrough_methods: z.array(z.string().superRefine((m, ctx) => {
    const problem = passthroughProblem(m);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })).default([]).describe('methods forwarded besides those the MCP revision in use defines (anything else is answered -32601)'),
};

export const ServerSchema = z.union([
  z.strictObject({
    ...ServerBase,
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}).describe('the server\'s own variables, on top of the base (PATH, HOME, locale, temp dir, proxy and CA variables)'),
    env_inherit: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')).default([])
      .describe('names of variables passed from toolgate\'s environment as they are (nothing else is, besides the base and env)'),
    cwd: z.string().optional(),
  }),
  z.strictObject({
    ...ServerBase,
    url: z.url(),
    headers: z.record(z.string(), z.string()).default({}),
  }),
], { error: 'a server needs either command (with args, env, env_inherit, cwd) or url (with headers), and only known fields' });

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
    pending_client_ttl: Duration.default('10m').describe('how long a registered client waits for approval on the consent page before it is forgotten'),
    registrations_per_address: z.number().int().min(1).default(10).describe('client registrations one client address may make in registration_window'),
    registration_window: Duration.default('10m'),
    client_metadata_documents: z.boolean().default(true).describe('accept client_ids that are https URLs of client ID metadata documents'),
    client_metadata_allow_hosts: z.array(z.string().min(1)).default([])
      .describe('hosts whose metadata documents may be fetched over plain http and from private or loopback addresses'),
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
  audit: z.union([
    z.string().transform((path) => ({ path, retain: undefined, prune_every: '1h' })),
    z.strictObject({
      path: z.string().optional().describe('audit log SQLite file; default TOOLGATE_HOME/audit.db'),
      retain: Duration.optional().describe('rows older than this are pruned (a checkpoint keeps the rest verifiable); default: kept forever'),
      prune_every: Duration.default('1h').describe('how often serve prunes, in the background'),
    }),
  ], { error: 'audit is a file path, or {path, retain: 90d, prune_every: 1h}' }).optional()
    .describe('audit log SQLite file, or {path, retain, prune_every}; default TOOLGATE_HOME/audit.db, kept forever'),
  fail_open: z.boolean().default(false).describe('every server\'s fail_open unless it sets its own: forward limited calls uncounted when the state store fails (default: deny them)'),
  admin: z.strictObject({ token: z.string().min(16, 'use at least 16 characters') }).optional(),
  sessions: z.strictObject({
    idle_timeout: DURATION.default('15m'),
    idle_timeout_unused: DURATION.default('2m').describe('sessions with no GET stream open that sent nothing this long are closed'),
    max: z.number().int().positive().default(100).describe('open sessions per server'),
    max_per_grant: z.number().int().positive().default(20).describe('open sessions per grant'),
    max_body: z.string().regex(/^\d+(kb|mb)$/i).default('4mb'),
    resume_buffer: z.string().regex(/^\d+(kb|mb)$/i).default('1mb')
      .describe('bytes of SSE events one Streamable HTTP session keeps for a client that resumes a dropped stream (Last-Event-ID)'),
    resume_buffer_total: z.string().regex(/^\d+(kb|mb)$/i).default('64mb').describe('the same, across all sessions'),
  }).prefault({}),
  connections: z.strictObject({
    max: z.number().int().positive().default(512).describe('open connections in total; past it new ones are refused (503)'),
    max_per_address: z.number().int().positive().default(128)
      .describe('open connections per client address (past a trusted proxy: requests in progress per forwarded address)'),
    headers_timeout: DURATION.default('10s').describe('time a connection has to send a complete request head'),
    request_timeout: DURATION.default('30s').describe('time a request has to arrive complete, head and body'),
    keep_alive: DURATION.default('65s')
      .describe('how long a connection is kept open idle between requests (keep-alive); keep a load balancer\'s idle timeout below it'),
  }).prefault({}),
  trusted_proxies: z.array(z.string().refine(isAddressOrCidr, 'an IP address or CIDR such as 10.0.0.0/8')).default([])
    .describe('reverse proxies whose X-Forwarded-For is believed: the client is the right-most address not in this list'),
  metrics: z.strictObject({ token: z.string().min(16, 'use at least 16 characters') }).optional()
    .describe('with a token, /metrics needs Authorization: Bearer <token>; without, it is open'),
  shutdown: z.strictObject({
    grace: z.string().regex(/^\d+(s|m)$/, 'a duration such as 30s or 2m (0s: cancel at once)').default('30s')
      .describe('on SIGTERM, how long calls already forwarded may take to finish; then they are cancelled upstream'),
  }).prefault({}),
  telemetry: TelemetrySchema.optional(),
  approvals: z.strictObject({
    retention: Duration.default('7d').describe('how long ended approvals (denied, timed out, used, unused) are kept; the audit log keeps every step'),
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
function substitute(value: unknown, at: (string | number)[], base: string, issues: PolicyIssue[], unresolved?: PolicyIssue[], placeholders = false): unknown {
  if (typeof value === 'string') {
    return value.replace(REF, (_, file: string | undefined, name: string) => {
      let problem: string | undefined;
      let out = '';
      if (file) {
        const path = isAbsolute(name) ? name : resolve(base, name);
        try { out = readFileSync(path, 'utf8').trim(); } catch { problem = `cannot read the file ${name}`; }
      } else if (!Object.hasOwn(process.env, name) || process.env[name] === undefined) problem = `the environment variable ${name} is not set`;
      else out = process.env[name]!;
      if (problem) {
        (unresolved ?? issues).push({ pointer: pointerOf(at), message: problem });
        // State commands read only state and audit: any other unread value (a webhook or metrics
        // secret, a server's env or URL) stands in as a placeholder that passes the schema and is
        // listed in `unresolved`, so a command that does need it (record --server) refuses there.
        if (placeholders && at[0] !== 'state' && at[0] !== 'audit') out = `unset-${file ? 'file' : 'variable'}-${name}-not-read-by-state-commands`;
      }
      return out;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, [...at, i], base, issues, unresolved, placeholders));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, [...at, k], base, issues, unresolved, placeholders)]));
  }
  return value;
}

export interface ConfigOptions {
  /** Strict JSON (a .json file). */
  json?: boolean;
  /**
   * For commands that work on state: the admin and metrics sections are skipped, and a ${VAR} or
   * ${file:…} that cannot be read is noted in `unresolved` instead of failing the load (outside
   * state and audit it stands in as a placeholder; a command that needs that value, e.g. a
   * server's env to start it, checks `unresolved`).
   */
  forState?: boolean;
}

export type ConfigResult = SchemaResult<GatewayConfig> & {
  unresolved?: PolicyIssue[];
  /**
   * forState: the admin token the state command skipped, when its ${VAR} or file can be read —
   * used only to keep it from the upstreams a state command starts (`record --server`).
   */
  skippedAdminToken?: string;
};

/** An issue at `pointer` or above it (but not the whole document), explained by an unreadable value at `at`. */
const explainedBy = (pointer: string, at: string) => pointer !== '' && (at === pointer || at.startsWith(`${pointer}/`));

export function parseGatewayConfig(text: string, base: string, options: ConfigOptions = {}): ConfigResult {
  // Every ${VAR} or ${file:…} that cannot be read, at its place: fatal to serve, noted for state commands.
  const unread: PolicyIssue[] = [];
  let skippedAdmin: unknown;
  const prepare = (raw: unknown, issues: PolicyIssue[]) => {
    if (options.forState && raw && typeof raw === 'object' && !Array.isArray(raw)) {
      skippedAdmin = (raw as { admin?: unknown }).admin;
      raw = { ...raw, admin: undefined, metrics: undefined, telemetry: undefined };
    }
    const out = substitute(raw, [], base, issues, unread, options.forState);
    if (!options.forState) issues.push(...unread);
    return out;
  };
  const result = parseWithSchema(text, GatewayConfigSchema, { json: options.json, prepare });
  if (!result.ok) {
    // A value left empty for want of its variable fails with that reason alone, not also as "too short".
    const issues = result.issues.flatMap((i) => {
      const why = unread.find((u) => explainedBy(i.pointer, u.pointer));
      if (!why || unread.some((u) => u.pointer === i.pointer && u.message === i.message)) return [i];
      return options.forState ? [{ ...i, message: why.message }] : [];
    });
    return { ok: false, issues };
  }
  const unresolved = options.forState ? unread : undefined;
  const c = result.value;
  const at = (p: string | undefined) => (p === undefined || isAbsolute(p) ? p : resolve(base, p));
  for (const s of Object.values(c.servers)) {
    s.policy = at(s.policy);
    if ('cwd' in s) s.cwd = at(s.cwd);
  }
  // State commands skip the admin section (they need only state and audit), so only serve checks this.
  if (c.oauth && 'builtin' in c.oauth && !c.admin && !options.forState) {
    return { ok: false, issues: [{ pointer: '/oauth', message: 'the built-in authorization server needs admin.token: a person approves each client by signing in with it' }] };
  }
  if (c.state?.startsWith('sqlite:')) c.state = `sqlite:${at(c.state.slice('sqlite:'.length))}`;
  if (c.audit) c.audit.path = at(c.audit.path);
  return { ...result, unresolved, skippedAdminToken: options.forState ? readAdminToken(skippedAdmin, base) : undefined };
}

/** The admin token of an admin section a state command skipped, if it can be read. */
function readAdminToken(admin: unknown, base: string): string | undefined {
  const missing: PolicyIssue[] = [];
  const read = substitute(admin, ['admin'], base, [], missing) as { token?: unknown } | undefined;
  return missing.length === 0 && read && typeof read.token === 'string' && read.token !== '' ? read.token : undefined;
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
