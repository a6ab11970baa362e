import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { AuditLog } from '../audit/index.js';
import { addressKey, clientAddress } from '../http/client-address.js';
import type { GatewayConfig } from '../config/gateway.js';
import { HttpError } from '../http/errors.js';
import type { OAuthStore } from '../state/types.js';

/** The built dashboard (plain HTML, CSS and JavaScript modules) ships beside dist/ and src/ in the package. */
const ASSETS = new URL('../../web/', import.meta.url);
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
const COOKIE = 'toolgate_session';
const SESSION_MS = 12 * 3_600_000;
const MAX_FAILURES = 10;

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

function loadAssets(): Map<string, { body: Buffer; type: string }> {
  const out = new Map<string, { body: Buffer; type: string }>();
  for (const name of readdirSync(ASSETS)) {
    const ext = name.slice(name.lastIndexOf('.'));
    if (Object.hasOwn(TYPES, ext)) out.set(name, { body: readFileSync(new URL(name, ASSETS)), type: TYPES[ext] });
  }
  return out;
}

const b64 = (buf: Buffer) => buf.toString('base64url');

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookieOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === COOKIE) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** True when a browser says the request comes from a page of this very origin. */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin) {
    try { return new URL(origin).host === req.headers.host; } catch { return false; }
  }
  return req.headers['sec-fetch-site'] === 'same-origin';
}

export interface DashboardOptions {
  config(): GatewayConfig;
  audit: AuditLog;
  /** The state store's key-value part: signed-in sessions live there, so sign-out holds across restarts and instances. */
  store: OAuthStore;
  /** Told after a sign-out here, once the session is gone: streams it opened are ended. */
  signedOut?: () => Promise<void>;
}

/**
 * The dashboard at /ui: its static pages, and sign-in. Signing in with the admin token sets an
 * HttpOnly, SameSite=Strict cookie (Secure over TLS) that the admin API accepts in place of the
 * bearer token; every state-changing request with it must come from this origin and carry the
 * session's CSRF token in `x-csrf-token`. The cookie is signed with a key derived from the admin
 * token (changing it signs everyone out) and names a session kept in the state store until it
 * expires or its user signs out: sign-out ends it for good, on every instance sharing the store
 * and across restarts, and a restart keeps the others signed in (with a persistent store). The
 * token itself is never put in a cookie, a URL or a page.
 */
export class Dashboard {
  private readonly assets = loadAssets();
  private readonly failures = new Map<string, { count: number; until: number }>();

  constructor(private readonly opts: DashboardOptions) {}

  private key(): Buffer | null {
    const admin = this.opts.config().admin;
    return admin ? createHmac('sha256', admin.token).update('toolgate dashboard session v1').digest() : null;
  }

  private mac(key: Buffer, text: string): string {
    return b64(createHmac('sha256', key).update(text).digest());
  }

  /** The session a request's cookie names, if it is genuine, unexpired and still in the store (not signed out). */
  private async session(req: IncomingMessage, now = Date.now()): Promise<{ id: string; csrf: string; expires: number } | null> {
    const key = this.key();
    const value = cookieOf(req);
    if (!key || !value) return null;
    const [expires, id, mac] = value.split('.');
    if (!expires || !id || !mac || !sameText(mac, this.mac(key, `${expires}.${id}`))) return null;
    if (Number(expires) <= now || (await this.opts.store.get(storeKey(id), now)) === null) return null;
    return { id, csrf: this.mac(key, `csrf.${id}`), expires: Number(expires) };
  }

  /** Whether the request's session cookie still names a live session (for a stream it opened). */
  async signedIn(req: IncomingMessage): Promise<boolean> {
    return (await this.session(req)) !== null;
  }

  /**
   * Whether the admin API may serve this request on the strength of a session cookie: false
   * without a valid session (the caller answers 401); a state-changing request from another
   * origin or without the session's CSRF token is refused with 403.
   */
  async authorizes(req: IncomingMessage): Promise<boolean> {
    const session = await this.session(req);
    if (!session) return false;
    const method = req.method ?? 'GET';
    if (method === 'GET' || method === 'HEAD') return true;
    const csrf = req.headers['x-csrf-token'];
    if (!sameOrigin(req) || typeof csrf !== 'string' || !sameText(csrf, session.csrf)) {
      throw new HttpError(403, 'cross-site request refused: the dashboard sends x-csrf-token from its own origin');
    }
    return true;
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    if (!this.opts.config().admin) throw new HttpError(404, 'the dashboard is off: set admin.token in the configuration');
    const method = req.method ?? 'GET';
    if (pathname === '/ui/session') return this.sessionRoute(req, res, method);
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'the dashboard\'s pages are read with GET');
    if (pathname === '/ui') {
      res.writeHead(308, { location: '/ui/' });
      res.end();
      return;
    }
    const name = pathname === '/ui/' ? 'index.html' : pathname.slice('/ui/'.length);
    const asset = this.assets.get(name);
    if (!asset) throw new HttpError(404, `no such dashboard file: ${pathname}`);
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type });
    res.end(method === 'HEAD' ? undefined : asset.body);
  }

  /** GET: am I signed in (and my CSRF token); POST {token}: sign in; DELETE: sign out. */
  private async sessionRoute(req: IncomingMessage, res: ServerResponse, method: string): Promise<void> {
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (method === 'GET') {
      const session = await this.session(req);
      if (!session) return json(401, { signedIn: false });
      return json(200, { signedIn: true, csrf: session.csrf, expires: new Date(session.expires).toISOString() });
    }
    if (method === 'DELETE') {
      if (!(await this.authorizes(req))) return json(401, { signedIn: false });
      const session = (await this.session(req))!;
      await this.opts.store.delete(storeKey(session.id));
      await this.opts.signedOut?.();
      return json(200, { signedIn: false }, { 'set-cookie': this.cookie(req, '', 0) });
    }
    if (method !== 'POST') throw new HttpError(405, 'sign in with POST, out with DELETE');
    if (!sameOrigin(req)) throw new HttpError(403, 'cross-site sign-in refused');
    const ip = addressKey(clientAddress(req));
    const now = Date.now();
    const f = this.failures.get(ip);
    if (f && f.until > now && f.count >= MAX_FAILURES) throw new HttpError(429, 'too many failed sign-ins: try again in a minute', { 'retry-after': '60' });
    const token = await readToken(req);
    const admin = this.opts.config().admin!;
    if (!token || !sameText(token, admin.token)) {
      const current = f && f.until > now ? f : { count: 0, until: now + 60_000 };
      current.count++;
      this.failures.set(ip, current);
      this.opts.audit.append({ kind: 'auth', decision: 'deny', message: `dashboard sign-in: wrong admin token (from ${ip})` });
      return json(401, { signedIn: false, error: 'that is not the admin token' });
    }
    this.prune(now);
    const expires = now + SESSION_MS;
    const id = b64(randomBytes(18));
    const key = this.key()!;
    await this.opts.store.put(storeKey(id), String(expires), expires);
    const cookie = this.cookie(req, `${expires}.${id}.${this.mac(key, `${expires}.${id}`)}`, SESSION_MS / 1000);
    this.opts.audit.append({ kind: 'auth', decision: 'allow', message: `dashboard sign-in (from ${ip})` });
    if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      res.writeHead(303, { ...SECURITY_HEADERS, location: '/ui/', 'set-cookie': cookie });
      res.end();
      return;
    }
    return json(200, { signedIn: true, csrf: this.mac(key, `csrf.${id}`), expires: new Date(expires).toISOString() }, { 'set-cookie': cookie });
  }

  private cookie(req: IncomingMessage, value: string, maxAge: number): string {
    const tls = (req.socket as TLSSocket).encrypted === true || req.headers['x-forwarded-proto'] === 'https';
    return `${COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${tls ? '; Secure' : ''}`;
  }

  private prune(now: number): void {
    for (const [ip, f] of this.failures) if (f.until <= now) this.failures.delete(ip);
  }
}

/** A session's key in the store: the id's hash, not the id itself (a cookie also needs the signature). */
function storeKey(id: string): string {
  return `dashboard:session:${createHash('sha256').update(id).digest('base64url')}`;
}

/** The token from a JSON body {token} or a form post token=…; the body is small or refused. */
function readToken(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 4096) { req.removeAllListeners('data'); reject(new HttpError(413, 'a sign-in body is at most 4 kB')); return; }
      chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > 4096) return;
      const text = Buffer.concat(chunks).toString('utf8');
      if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return resolve(new URLSearchParams(text).get('token') ?? undefined);
      try {
        const body = JSON.parse(text) as { token?: unknown };
        resolve(typeof body?.token === 'string' ? body.token : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}
