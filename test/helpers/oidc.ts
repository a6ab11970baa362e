import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import * as client from 'openid-client';
import Provider from 'oidc-provider';

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
