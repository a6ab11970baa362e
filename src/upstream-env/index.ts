/**
 * What an upstream server process gets from toolgate's environment, and toolgate's own secrets,
 * which no upstream ever gets. One module for every place that starts a server: the gateway's
 * sessions, its listings for the dashboard and admin API, `record`/`pin`/`policy recommend`, and
 * `toolgate run`. It knows nothing of the layers that use it (plain shapes in, plain values out).
 */

import { findSecrets } from '../secrets/index.js';
import { redisDsnPassword } from '../state/redis-dsn.js';

/**
 * Under `serve` a stdio server gets these from toolgate's environment (when set), its `env`, and
 * the names in its `env_inherit` — nothing else. Locale (LANG, LANGUAGE, LC_*), temp dir, and
 * what `npx` needs behind a corporate proxy.
 */
export const BASE_ENV: readonly string[] = [
  'PATH', 'HOME', 'LANG', 'LANGUAGE', 'TMPDIR', 'TMP', 'TEMP',
  'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy',
  'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE',
  // Windows cannot start most programs without these.
  ...(process.platform === 'win32' ? ['SYSTEMROOT', 'WINDIR', 'COMSPEC', 'PATHEXT', 'USERPROFILE', 'APPDATA', 'LOCALAPPDATA', 'PROGRAMFILES'] : []),
];
const LOCALE = /^LC_[A-Z_]+$/;

/** Environment variables toolgate reads for itself whose values are secrets. */
const OWN_SECRET_VARS = ['TOOLGATE_ADMIN_TOKEN'];
/** Environment variables toolgate reads for itself whose values may hold a store password. */
const OWN_DSN_VARS = ['TOOLGATE_STATE'];

export interface Secret {
  /** What it is, for messages ("the admin token"); never the value. */
  what: string;
  value: string;
  /** A URL's password: also found as `:value@` inside a value, whatever its length. */
  userinfo?: boolean;
}

/** A secret this short is matched only as a whole value (a short one would be found inside unrelated text). */
const MIN_INSIDE = 8;
/** The base64 of a secret is looked for inside a value only when at least this much of it is stable (see `base64Cores`). */
const MIN_BASE64_CORE = 8;

/** Every %XX in `text` decoded (as UTF-8 where it is; a lone or broken escape is kept as written). */
function percentDecoded(text: string): string {
  if (!text.includes('%')) return text;
  try { return decodeURIComponent(text); } catch { /* a broken escape somewhere: decode the runs that are whole */ }
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => { try { return decodeURIComponent(run); } catch { return run; } });
}

/**
 * The parts of a secret's base64 that are the same wherever it starts in the encoded text (a
 * Basic header encodes `user:secret`, so the secret may start at any of three byte offsets):
 * for each offset, the encoding of the whole 3-byte groups that hold only the secret's bytes.
 */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const cores: string[] = [];
  for (const skip of [0, 1, 2]) {
    const whole = Math.floor((bytes.length - skip) / 3) * 3;
    if (whole <= 0) continue;
    const chunk = bytes.subarray(skip, skip + whole);
    for (const core of [chunk.toString('base64'), chunk.toString('base64url')]) if (core.length >= MIN_BASE64_CORE && !cores.includes(core)) cores.push(core);
  }
  return cores;
}

/**
 * Toolgate's own secrets, matched by value: a value carries one if it is one, or (8+ characters)
 * contains it — as written, percent-encoded (every form: the value is decoded before it is
 * compared) or base64-encoded (as a Basic header carries it); a URL password also as `:pw@` at
 * any length.
 */
export class OwnSecrets {
  private readonly list: Secret[] = [];
  private readonly encoded: { secret: Secret; forms: string[] }[] = [];

  add(what: string, value: string | undefined, userinfo = false): this {
    if (!value) return this;
    const known = this.list.find((s) => s.value === value);
    if (known) {
      known.userinfo ||= userinfo;
      return this;
    }
    const secret: Secret = { what, value, ...(userinfo ? { userinfo } : {}) };
    this.list.push(secret);
    const whole = Buffer.from(value, 'utf8');
    const forms = value.length >= MIN_INSIDE ? base64Cores(value) : [whole.toString('base64'), whole.toString('base64url')];
    this.encoded.push({ secret, forms: [...new Set(forms)] });
    return this;
  }

  /** The password in a `redis://user:password@host` (or `redis+cluster://…`) DSN, as written in it and decoded (and the DSN itself, which carries it). */
  addDsn(what: string, dsn: string | undefined): this {
    if (!dsn || !/^rediss?(\+cluster)?:/i.test(dsn)) return this;
    const raw = redisDsnPassword(dsn);
    if (!raw) return this;
    return this.addUrlPassword(`the password of ${what}`, raw).add(what, dsn);
  }

  /** A password as a URL carries it (percent-encoded): found decoded, as written, and as `:pw@` at any length. */
  addUrlPassword(what: string, raw: string): this {
    this.add(what, percentDecoded(raw), true);
    if (percentDecoded(raw) !== raw) this.add(what, raw, true);
    return this;
  }

  /** Those toolgate reads from its own variables (TOOLGATE_ADMIN_TOKEN, the password in TOOLGATE_STATE). */
  addOwnVars(from: NodeJS.ProcessEnv): this {
    for (const name of OWN_SECRET_VARS) this.add(name, from[name]);
    for (const name of OWN_DSN_VARS) this.addDsn(name, from[name]);
    return this;
  }

  /** The secret `value` carries, if any. */
  in(value: string): Secret | undefined {
    const texts = [...new Set([value, percentDecoded(value)])];
    const found = this.list.find((s) => texts.some((t) => t === s.value
      || (s.value.length >= MIN_INSIDE && t.includes(s.value))
      || (s.userinfo && t.includes(`:${s.value}@`))));
    if (found) return found;
    return this.encoded.find(({ secret, forms }) => forms.some((f) => (secret.value.length >= MIN_INSIDE ? value.includes(f) : value === f)))?.secret;
  }

  get size(): number {
    return this.list.length;
  }
}

/**
 * Credentials a URL of toolgate's own carries: a Slack webhook URL (the URL is the credential), a
 * password in its userinfo.
 */
function urlCredentials(secrets: OwnSecrets, what: string, value: string): void {
  if (!value.includes('://')) return;
  for (const span of findSecrets(value)) {
    if (span.kind === 'slack_webhook') secrets.add(what, value).add(what, value.slice(span.start, span.end));
  }
  let password = '';
  try { password = new URL(value).password; } catch { return; }
  if (password) secrets.addUrlPassword(`the password in ${what}`, password);
}

/** Keys whose string values in toolgate's configuration are its own secrets (admin.token, a webhook's secret, …). */
const SECRET_KEYS = /^(token|secret|password|client_secret|private_key)$/;
/** What a server entry hands its upstream: not toolgate's own (it is checked, not collected). */
const UPSTREAM_FIELDS = new Set(['command', 'args', 'env', 'env_inherit', 'cwd', 'url', 'headers']);

/**
 * Toolgate's own secrets in a gateway configuration (the admin token, every webhook secret, and
 * any later `token`/`secret`/`password` field), the store's password, and those in its own variables.
 */
export function configSecrets(config: unknown, stateDsn: string | undefined, from: NodeJS.ProcessEnv = process.env): OwnSecrets {
  const secrets = new OwnSecrets();
  const walk = (value: unknown, path: string[]): void => {
    if (!value || typeof value !== 'object') return;
    for (const [key, v] of Object.entries(value)) {
      if (path.length === 2 && path[0] === 'servers' && UPSTREAM_FIELDS.has(key)) continue;
      const what = path[0] === 'servers' ? `${[...path.slice(2), key].join('.')} of server "${path[1]}"` : [...path, key].join('.');
      // Every header sent to the OTLP collector is a credential of toolgate's (authorization, api keys).
      const otlpHeader = path.length === 2 && path[0] === 'telemetry' && path[1] === 'headers';
      if (typeof v === 'string' && (SECRET_KEYS.test(key) || otlpHeader)) secrets.add(what, v);
      else if (typeof v === 'string') urlCredentials(secrets, what, v);
      else walk(v, [...path, key]);
    }
  };
  walk(config, []);
  return secrets.addOwnVars(from).addDsn('the state store DSN', stateDsn);
}

export interface UpstreamShape {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  env_inherit?: string[];
  url?: string;
  headers?: Record<string, string>;
  cwd?: string;
}

/** A stdio server's whole environment under `serve`: the base, its `env_inherit` names, then its `env`. */
export function serveEnv(server: Pick<UpstreamShape, 'env' | 'env_inherit'>, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  const names = new Set([...BASE_ENV, ...Object.keys(from).filter((k) => LOCALE.test(k)), ...(server.env_inherit ?? [])]);
  for (const name of names) {
    const value = from[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...server.env };
}

/**
 * The environment of a server a person starts from their own shell or MCP client (`toolgate run
 * -- CMD`, `record -- CMD`): all of it — that is how its API keys arrive — minus toolgate's own
 * secrets, by name and by value.
 */
export function clientEnv(secrets: OwnSecrets, from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(from)) {
    if (value === undefined || OWN_SECRET_VARS.includes(name) || secrets.in(value)) continue;
    env[name] = value;
  }
  return env;
}

/**
 * Where a server entry would hand one of toolgate's secrets to its upstream, as one line naming
 * the server and the variable (or header, argument, URL) — never the value.
 */
export function secretLeak(name: string, server: UpstreamShape, secrets: OwnSecrets, from: NodeJS.ProcessEnv = process.env): string | undefined {
  if (secrets.size === 0) return undefined;
  const places: [string, string][] = [];
  if (server.command !== undefined) {
    const inherited = new Set(server.env_inherit ?? []);
    for (const [k, v] of Object.entries(serveEnv(server, from))) {
      const how = Object.hasOwn(server.env ?? {}, k) ? 'env' : inherited.has(k) ? 'env_inherit' : 'the base environment';
      places.push([`the environment variable ${k} (from ${how})`, v]);
    }
    (server.args ?? []).forEach((a, i) => places.push([`args[${i}]`, a]));
    places.push(['its command', server.command]);
    if (server.cwd !== undefined) places.push(['its cwd', server.cwd]);
  }
  if (server.url !== undefined) places.push(['its url', server.url]);
  for (const [k, v] of Object.entries(server.headers ?? {})) places.push([`the header ${k}`, v]);
  for (const [where, value] of places) {
    const found = secrets.in(value);
    if (found) return `server "${name}": ${where} would hand its upstream toolgate's own secret (${found.what}); an upstream must never hold it — give the server a credential of its own`;
  }
  return undefined;
}
