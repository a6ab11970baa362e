import type { IncomingMessage } from 'node:http';

/**
 * The gateway as an OAuth protected resource (RFC 9728): every server URL is its own resource,
 * with its metadata at /.well-known/oauth-protected-resource<path of the server URL>.
 */

export const PRM_PREFIX = '/.well-known/oauth-protected-resource';

const SERVER_PATHS = [/^\/mcp\/([^/]+)\/?$/, /^\/([^/]+)\/mcp\/?$/, /^\/sse\/([^/]+)\/?$/, /^\/([^/]+)\/sse\/?$/];

/** The server a URL path addresses, in any of the gateway's forms (/mcp/S, /S/mcp, /sse/S, /S/sse). */
export function serverOfPath(pathname: string): string | undefined {
  for (const re of SERVER_PATHS) {
    const m = re.exec(pathname);
    if (m && m[1] !== 'mcp' && m[1] !== 'sse') {
      try { return decodeURIComponent(m[1]); } catch { return undefined; }
    }
  }
  return undefined;
}

/** Where clients reach the gateway: the configured public URL, else this request's (already validated) Host. */
export function baseUrl(req: IncomingMessage, publicUrl?: string): string {
  if (publicUrl) return publicUrl.replace(/\/+$/, '');
  return `http://${req.headers.host ?? 'localhost'}`;
}

/** The resource's canonical URI: no trailing slash, no query (the MCP spec's canonical form). */
export function resourceUri(base: string, pathname: string): string {
  return `${base}${pathname.replace(/\/+$/, '')}`;
}

export function metadataUrl(base: string, pathname: string): string {
  return `${base}${PRM_PREFIX}${pathname.replace(/\/+$/, '')}`;
}

export interface ResourceMetadata {
  resource: string;
  authorization_servers?: string[];
  bearer_methods_supported: string[];
  resource_name: string;
  resource_documentation?: string;
}

/**
 * RFC 9728 metadata for one server URL. With static grants only, no authorization server is named:
 * a bearer token in the header is the only way in.
 */
export function protectedResourceMetadata(base: string, pathname: string, server: string, authorizationServers: string[] | undefined): ResourceMetadata {
  return {
    resource: resourceUri(base, pathname),
    ...(authorizationServers ? { authorization_servers: authorizationServers } : {}),
    bearer_methods_supported: ['header'],
    resource_name: `toolgate: ${server}`,
  };
}

/** An RFC 6750 challenge; quoted-string values with `"` and `\` escaped (RFC 9110 §5.6.4). */
export function bearerChallenge(params: Record<string, string | undefined>): string {
  const parts = Object.entries(params)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}="${v.replace(/[\\"]/g, (c) => `\\${c}`).replace(/[\r\n]+/g, ' ')}"`);
  return parts.length ? `Bearer ${parts.join(', ')}` : 'Bearer';
}
