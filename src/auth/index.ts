import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuditLog } from '../audit/index.js';
import type { GatewayConfig } from '../config/gateway.js';
import type { AuthResult, Grants } from '../grants/grants.js';
import type { Logger } from '../log.js';
import type { OAuthStore } from '../state/types.js';
import { BuiltinAuthorizationServer } from './builtin.js';
import { ExternalIssuer, looksLikeJwt, type ExternalConfig } from './external.js';
import { baseUrl, bearerChallenge, metadataUrl, PRM_PREFIX, protectedResourceMetadata, serverOfPath } from './resource.js';

export interface McpAuthDeps {
  config: () => GatewayConfig;
  grants: Grants;
  store: OAuthStore;
  audit: AuditLog;
  log: Logger;
}

export interface Refusal {
  status: number;
  message: string;
  headers: Record<string, string>;
}

const staticHint = (server: string) => `this gateway takes grant tokens only (no OAuth sign-in): send Authorization: Bearer <grant token>; an operator creates one with toolgate grants create --server ${server} --label <name>`;

/**
 * MCP authorization for the gateway: each server URL is an OAuth protected resource (RFC 9728)
 * whose tokens are static grants, grants issued by the built-in authorization server, or JWTs
 * from an external identity provider, depending on `oauth` in the configuration.
 */
export class McpAuth {
  private readonly builtin: BuiltinAuthorizationServer;
  private readonly external: ExternalIssuer;

  constructor(private readonly deps: McpAuthDeps) {
    this.builtin = new BuiltinAuthorizationServer(deps);
    this.external = new ExternalIssuer(() => deps.config().oauth as ExternalConfig, deps.log);
  }

  private get mode(): 'static' | 'builtin' | 'external' {
    const o = this.deps.config().oauth;
    return !o ? 'static' : 'builtin' in o ? 'builtin' : 'external';
  }

  private base(req: IncomingMessage): string {
    return baseUrl(req, this.deps.config().oauth?.public_url);
  }

  /** The authorization servers named in the metadata; none with static grants only. */
  private authorizationServers(req: IncomingMessage): string[] | undefined {
    const o = this.deps.config().oauth;
    if (!o) return undefined;
    return ['builtin' in o ? this.base(req) : o.issuer];
  }

  /** A bearer token for one server: a grant token (static or built-in OAuth), or a JWT in external mode. */
  async authenticate(token: string | undefined, server: string): Promise<AuthResult> {
    if (token && this.mode === 'external' && looksLikeJwt(token)) return this.external.verify(token, server);
    return this.deps.grants.authenticate(token, server);
  }

  /**
   * How a failed authentication is answered. With OAuth configured: 401 and a challenge that
   * points at the server URL's metadata (MCP authorization, RFC 9728 §5.1). With static grants
   * only: 403, because every MCP client answers a 401 by starting an OAuth flow that cannot
   * succeed here; a 403 that is not insufficient_scope makes them show our message instead.
   */
  refusal(req: IncomingMessage, server: string, pathname: string, result: Extract<AuthResult, { ok: false }>, hadToken: boolean): Refusal {
    if (result.status === 503) return { status: 503, message: result.reason, headers: { 'retry-after': '5' } };
    const resourceMetadata = metadataUrl(this.base(req), pathname.replace(/\/messages\/?$/, ''));
    const missing = !hadToken;
    if (this.mode === 'static') {
      const message = `${missing ? 'missing bearer token' : result.reason}: ${staticHint(server)}`;
      return {
        status: 403,
        message,
        headers: { 'www-authenticate': bearerChallenge({ realm: 'toolgate', error: 'invalid_token', error_description: message, resource_metadata: resourceMetadata }) },
      };
    }
    return {
      status: result.status,
      message: missing ? `missing bearer token: sign in with OAuth (metadata at ${resourceMetadata}) or send Authorization: Bearer <grant token>` : result.reason,
      headers: {
        'www-authenticate': bearerChallenge({
          realm: 'toolgate',
          resource_metadata: resourceMetadata,
          ...(missing ? {} : { error: 'invalid_token', error_description: result.reason }),
        }),
      },
    };
  }

  /** Metadata and the built-in authorization server's endpoints; false for any other path. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (url.pathname === PRM_PREFIX || url.pathname.startsWith(`${PRM_PREFIX}/`)) {
      this.resourceMetadata(req, res, url.pathname.slice(PRM_PREFIX.length));
      return true;
    }
    if (this.mode !== 'builtin') return false;
    return this.builtin.handle(req, res, url, this.base(req));
  }

  private resourceMetadata(req: IncomingMessage, res: ServerResponse, path: string): void {
    const server = serverOfPath(path);
    const config = this.deps.config();
    if (server === undefined || !Object.hasOwn(config.servers, server) || config.servers[server].auth === 'none') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not_found', error_description: 'protected resource metadata lives at /.well-known/oauth-protected-resource/mcp/<server> for each server that takes grants' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
    res.end(JSON.stringify(protectedResourceMetadata(this.base(req), path, server, this.authorizationServers(req))));
  }
}
