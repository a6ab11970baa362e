import { randomBytes, randomUUID } from 'node:crypto';
import { sha256 } from '../policy/load.js';
import type { Grant, GrantStore } from '../state/types.js';

export interface NewGrant {
  server: string;
  /** More servers the grant opens besides `server` (a multi-server grant: one agent across them). */
  servers?: string[];
  label: string;
  tags?: string[];
  policy?: string;
  /** Milliseconds from now. */
  expiresInMs?: number;
}

export type AuthResult =
  | { ok: true; grant: Grant }
  | { ok: false; status: 401 | 403 | 503; reason: string };

/** 256 random bits, URL-safe, with a prefix that secret scanners recognise. */
export function newToken(): string {
  return `tg_${randomBytes(32).toString('base64url')}`;
}

export function tokenHash(token: string): string {
  return sha256(token);
}

/** Every server a grant opens. */
export function serversOf(grant: Grant): string[] {
  return grant.servers?.length ? grant.servers : [grant.server];
}

/** Grants: tokens shown once at creation, stored only as SHA-256, checked on every request. */
export class Grants {
  constructor(private readonly store: GrantStore) {}

  async create(g: NewGrant, now = Date.now()): Promise<{ grant: Grant; token: string }> {
    // 0 must not read as "no expiry": a grant meant to expire at once would never expire.
    if (g.expiresInMs !== undefined && !(g.expiresInMs > 0)) throw new Error('a grant\'s expiry must be a duration above 0, e.g. 30d or 12h');
    const token = newToken();
    const opens = [...new Set([g.server, ...(g.servers ?? [])])];
    const grant: Grant = {
      id: `gr_${randomUUID().replace(/-/g, '').slice(0, 16)}`,
      label: g.label,
      server: g.server,
      ...(opens.length > 1 ? { servers: opens } : {}),
      tags: g.tags ?? [],
      ...(g.policy ? { policy: g.policy } : {}),
      createdAt: new Date(now).toISOString(),
      ...(g.expiresInMs !== undefined ? { expiresAt: new Date(now + g.expiresInMs).toISOString() } : {}),
    };
    await this.store.create(grant, tokenHash(token));
    return { grant, token };
  }

  /** Revocation and expiry act on the next request: nothing is cached. */
  async authenticate(token: string | undefined, server: string, now = Date.now()): Promise<AuthResult> {
    if (!token) return { ok: false, status: 401, reason: 'missing bearer token: send Authorization: Bearer <grant token>' };
    // Looked up by SHA-256, never compared as text: what a caller can time is the lookup of the
    // hash of its own guess, which says nothing about any real token.
    const grant = await this.store.byTokenHash(tokenHash(token));
    if (!grant) return { ok: false, status: 401, reason: 'unknown token' };
    if (grant.revokedAt) return { ok: false, status: 401, reason: 'the grant was revoked' };
    if (grant.expiresAt && Date.parse(grant.expiresAt) <= now) return { ok: false, status: 401, reason: 'the grant expired' };
    if (!serversOf(grant).includes(server)) return { ok: false, status: 403, reason: `the grant is for server${grant.servers ? 's' : ''} "${serversOf(grant).join('", "')}", not this one` };
    return { ok: true, grant };
  }

  async list(): Promise<Grant[]> {
    return this.store.list();
  }

  /** Finds a grant by id, or by label (optionally on one server); throws when none or several match. */
  async find(idOrLabel: string, server?: string): Promise<Grant> {
    const all = await this.store.list();
    const byId = all.find((g) => g.id === idOrLabel);
    if (byId) return byId;
    const byLabel = all.filter((g) => g.label === idOrLabel && !g.revokedAt && (!server || serversOf(g).includes(server)));
    if (byLabel.length === 1) return byLabel[0];
    if (byLabel.length > 1) throw new Error(`${byLabel.length} live grants are labelled "${idOrLabel}": give --server or the id`);
    throw new Error(`no grant with id or label "${idOrLabel}"`);
  }

  async rotate(idOrLabel: string, server?: string): Promise<{ grant: Grant; token: string }> {
    const grant = await this.find(idOrLabel, server);
    const token = newToken();
    if (!(await this.store.rotate(grant.id, tokenHash(token)))) throw new Error(`grant ${grant.id} is revoked`);
    return { grant, token };
  }

  /** A new token for a live grant, valid for `ttlMs` from now (an OAuth refresh); null when the grant is revoked. */
  async reissue(id: string, ttlMs: number, now = Date.now()): Promise<string | null> {
    const token = newToken();
    return (await this.store.rotate(id, tokenHash(token), new Date(now + ttlMs).toISOString())) ? token : null;
  }

  async byToken(token: string): Promise<Grant | null> {
    return this.store.byTokenHash(tokenHash(token));
  }

  async revokeId(id: string, now = Date.now()): Promise<boolean> {
    return this.store.revoke(id, new Date(now).toISOString());
  }

  async revoke(idOrLabel: string, server?: string, now = Date.now()): Promise<Grant> {
    const grant = await this.find(idOrLabel, server);
    if (!(await this.store.revoke(grant.id, new Date(now).toISOString()))) throw new Error(`grant ${grant.id} is already revoked`);
    return { ...grant, revokedAt: new Date(now).toISOString() };
  }
}
