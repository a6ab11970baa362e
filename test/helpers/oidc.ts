import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import * as client from 'openid-client';

/**
 * oidc-provider warns once, on import, that Node 20 is not an LTS it supports (it wants 22+).
 * The gateway supports Node 20 and the tests only need the provider to issue tokens, so exactly
 * that line is kept out of the test output; every other warning still shows.
 */
async function importProvider(): Promise<typeof import('oidc-provider').default> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime.')) return;
    warn(...args);
  };
  try {
    return (await import('oidc-provider')).default;
  } finally {
    console.warn = warn;
  }
}
const Provider = await importProvider();
type Provider = InstanceType<typeof Provider>;

/**
 * The provider's storage. Without one it falls back to its development-only memory adapter and
 * warns about it on every start; this is the same thing, given explicitly (tests need no more).
 */
class MapAdapter {
  private static readonly stores = new Map<string, Map<string, { payload: Record<string, unknown>; expires?: number }>>();
  private readonly store: Map<string, { payload: Record<string, unknown>; expires?: number }>;

  constructor(name: string) {
    let store = MapAdapter.stores.get(name);
    if (!store) MapAdapter.stores.set(name, (store = new Map()));
    this.store = store;
  }

  private live(id: string) {
    const e = this.store.get(id);
    if (e?.expires !== undefined && e.expires < Date.now()) { this.store.delete(id); return undefined; }
    return e;
  }

  async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
    this.store.set(id, { payload, expires: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
  }

  async find(id: string): Promise<Record<string, unknown> | undefined> {
    return this.live(id)?.payload;
  }

  async findByUid(uid: string): Promise<Record<string, unknown> | undefined> {
    for (const id of this.store.keys()) { const p = this.live(id)?.payload; if (p?.uid === uid) return p; }
    return undefined;
  }

  async findByUserCode(code: string): Promise<Record<string, unknown> | undefined> {
    for (const id of this.store.keys()) { const p = this.live(id)?.payload; if (p?.userCode === code) return p; }
    return undefined;
  }

  async consume(id: string): Promise<void> {
    const e = this.live(id);
    if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    this.store.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [id, e] of this.store) if (e.payload.grantId === grantId) this.store.delete(id);
  }
}

export interface SigningKey { jwk: JWK; privateKey: CryptoKey; publicJwk: JWK }

export async function newSigningKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  return { jwk, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

/**
 * A real OpenID provider (oidc-provider from npm) on a loopback port, issuing JWT access tokens
 * for client-credentials requests with an RFC 8707 resource; `groups` rides along as a claim.
 * `rotate` swaps the provider for one that signs with a new key (the old one still published).
 */
export class TestIdentityProvider {
  issuer = '';
  private provider?: Provider;
  private readonly http: Server;

  constructor() {
    this.http = createServer((req, res) => { void this.provider!.callback()(req, res); });
  }

  async start(keys: SigningKey[]): Promise<void> {
    await new Promise<void>((resolve) => this.http.listen(0, '127.0.0.1', () => resolve()));
    this.issuer = `http://127.0.0.1:${(this.http.address() as AddressInfo).port}`;
    this.use(keys);
  }

  use(keys: SigningKey[]): void {
    this.provider = new Provider(this.issuer, {
      adapter: MapAdapter,
      jwks: { keys: keys.map((k) => k.jwk) },
      clients: [
        { client_id: 'agent-ci', client_secret: 'agent-ci-secret-0123456789', grant_types: ['client_credentials'], redirect_uris: [], response_types: [] },
        { client_id: 'agent-other', client_secret: 'agent-other-secret-012345678', grant_types: ['client_credentials'], redirect_uris: [], response_types: [] },
      ],
      ttl: { ClientCredentials: 300 },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          getResourceServerInfo: (_ctx, resource) => ({ scope: 'mcp', audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: 300, jwt: { sign: { alg: 'RS256' } } }),
        },
      },
      extraTokenClaims: (_ctx, token) => ({ groups: token.clientId === 'agent-ci' ? ['ops', 'ci'] : ['guests'] }),
    });
  }

  /** An access token from the token endpoint, through openid-client (the gateway's tests act as the MCP client here). */
  async token(resource: string, clientId = 'agent-ci', secret = 'agent-ci-secret-0123456789'): Promise<string> {
    const config = await client.discovery(new URL(this.issuer), clientId, secret, undefined, { execute: [client.allowInsecureRequests] });
    const tokens = await client.clientCredentialsGrant(config, { resource, scope: 'mcp' });
    return tokens.access_token;
  }

  async stop(): Promise<void> {
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
