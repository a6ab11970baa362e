import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import { z } from 'zod';
import { durationToMs, type OAuthConfig } from '../config/gateway.js';
import type { AuthResult } from '../grants/grants.js';
import type { Logger } from '../log.js';

export type ExternalConfig = Extract<OAuthConfig, { issuer: string }>;

const Discovery = z.looseObject({ issuer: z.string(), jwks_uri: z.url() });

/** A JWT's shape (three base64url parts), as opposed to a toolgate grant token. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/.test(token);
}

/** A claim by name, or by a dotted path into nested objects (Keycloak's realm_access.roles). */
function claim(payload: JWTPayload, path: string): unknown {
  let value: unknown = payload;
  for (const part of path.split('.')) {
    if (!value || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function refusal(err: unknown): string {
  if (err instanceof errors.JWTExpired) return 'the token expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return 'the token is not for this server (audience)';
    if (err.claim === 'iss') return 'the token is from another issuer';
    if (err.claim === 'nbf') return 'the token is not valid yet';
    return `the token's ${err.claim} claim is not acceptable`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return 'the token\'s signing algorithm is not allowed';
  if (err instanceof errors.JWKSNoMatchingKey) return 'the token is signed with a key the issuer does not publish';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'the token\'s signature does not verify';
  return 'the token is not a valid JWT';
}

/**
 * Access tokens from an external OpenID provider, checked with `jose`: the signing key from the
 * issuer's JWKS (cached; an unknown key id refetches it, at most once per cooldown, which is how
 * a key rotation is picked up), `iss`, `aud`, `exp` and `nbf`, and an allow-list of algorithms.
 * Claims become the grant: a label from `sub` (or a chosen claim), tags from groups/roles.
 */
export class ExternalIssuer {
  private jwks?: { key: string; get: ReturnType<typeof createRemoteJWKSet> };

  constructor(private readonly config: () => ExternalConfig, private readonly log: Logger) {}

  private async keys(c: ExternalConfig): Promise<ReturnType<typeof createRemoteJWKSet>> {
    const key = `${c.issuer} ${c.jwks_uri ?? ''} ${c.jwks_cooldown}`;
    if (this.jwks?.key === key) return this.jwks.get;
    const uri = c.jwks_uri ?? (await this.discover(c.issuer));
    const get = createRemoteJWKSet(new URL(uri), { cooldownDuration: durationToMs(c.jwks_cooldown), cacheMaxAge: 10 * 60_000, timeoutDuration: 5000 });
    this.jwks = { key, get };
    return get;
  }

  /** OpenID Connect discovery, then RFC 8414; the document must name the configured issuer. */
  private async discover(issuer: string): Promise<string> {
    const url = new URL(issuer);
    const path = url.pathname.replace(/\/+$/, '');
    const candidates = [`${url.origin}${path}/.well-known/openid-configuration`, `${url.origin}/.well-known/oauth-authorization-server${path}`];
    for (const candidate of candidates) {
      let doc: z.infer<typeof Discovery>;
      try {
        const res = await fetch(candidate, { signal: AbortSignal.timeout(5000), headers: { accept: 'application/json' } });
        if (!res.ok) continue;
        const parsed = Discovery.safeParse(await res.json());
        if (!parsed.success) continue;
        doc = parsed.data;
      } catch {
        continue;
      }
      if (doc.issuer !== issuer) throw new IssuerUnavailable(`the discovery document at ${candidate} names the issuer ${doc.issuer}, not ${issuer}`);
      return doc.jwks_uri;
    }
    throw new IssuerUnavailable(`no discovery document for ${issuer}`);
  }

  async verify(token: string, server: string): Promise<AuthResult> {
    const c = this.config();
    let get;
    try { get = await this.keys(c); } catch (err) {
      this.log.error({ issuer: c.issuer }, `identity provider unavailable: ${(err as Error).message}`);
      return { ok: false, status: 503, reason: 'the identity provider cannot be reached to check the token; try again' };
    }
    const audience = (Array.isArray(c.audience) ? c.audience : [c.audience]).map((a) => a.replaceAll('{server}', server));
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, get, {
        issuer: c.issuer, audience, algorithms: c.algorithms, clockTolerance: durationToMs(c.clock_tolerance) / 1000, requiredClaims: ['exp'],
      }));
    } catch (err) {
      // jose reports every problem with the token as a JOSEError; anything else is the JWKS fetch failing.
      if (err instanceof errors.JWKSTimeout || !(err instanceof errors.JOSEError)) {
        this.log.error({ issuer: c.issuer }, `JWKS unavailable: ${(err as Error).message}`);
        return { ok: false, status: 503, reason: 'the identity provider\'s keys cannot be fetched; try again' };
      }
      return { ok: false, status: 401, reason: refusal(err) };
    }
    // The grant's identity is the subject (unique per issuer), never the label: a label claim such
    // as name, email or team need not be unique, and per-grant limits and approvals are keyed by the id.
    if (typeof payload.sub !== 'string' || !payload.sub) return { ok: false, status: 401, reason: 'the token has no sub claim: toolgate keys a grant by its subject' };
    const label = claim(payload, c.label_claim);
    if (typeof label !== 'string' || !label) return { ok: false, status: 401, reason: `the token has no ${c.label_claim} claim to name the grant` };
    const tags = new Set<string>();
    for (const name of c.tags_claims) {
      const v = claim(payload, name);
      for (const t of Array.isArray(v) ? v : [v]) if (typeof t === 'string' && t) tags.add(t);
    }
    return {
      ok: true,
      grant: {
        id: `jwt:${payload.sub}`, label, server, tags: [...tags],
        createdAt: new Date((payload.iat ?? 0) * 1000).toISOString(),
        expiresAt: new Date(payload.exp! * 1000).toISOString(),
      },
    };
  }
}

class IssuerUnavailable extends Error {}
