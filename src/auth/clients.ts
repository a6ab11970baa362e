import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { Logger } from '../log.js';
import type { OAuthStore } from '../state/types.js';
import { OAuthError, readJson, sendJson } from './http.js';

export interface Client { client_id: string; client_name?: string; redirect_uris: string[]; client_id_issued_at: number }

const PENDING_MS = 24 * 3_600_000;
const APPROVED_MS = 365 * 24 * 3_600_000;

export const newSecret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;

const ClientMetadata = z.looseObject({
  redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
  client_name: z.string().max(200).optional(),
  token_endpoint_auth_method: z.string().optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
});

/** Loopback http, https, or a private-use scheme of a native app; never a script or a fragment. */
function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try { url = new URL(uri); } catch { return `${uri} is not a URL`; }
  if (url.hash) return `${uri} has a fragment`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) ? undefined : `${uri}: plain http is allowed only to a loopback address`;
  if (['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:'].includes(url.protocol)) return `${uri}: the scheme ${url.protocol} is refused`;
  return undefined;
}

/**
 * Dynamically registered clients (RFC 7591), public only. A registration waits for approval on
 * the consent page for a day; at most `maxPending` wait at once, so anonymous registrations
 * cannot fill the store. An approved client is kept a year.
 */
export class ClientRegistry {
  constructor(private readonly store: OAuthStore, private readonly maxPending: () => number, private readonly log: Logger) {}

  async register(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parsed = ClientMetadata.safeParse(await readJson(req));
    if (!parsed.success) throw new OAuthError(400, 'invalid_client_metadata', 'redirect_uris (1 to 10 URLs) is required; client_name at most 200 characters');
    const meta = parsed.data;
    for (const uri of meta.redirect_uris) {
      const problem = redirectUriProblem(uri);
      if (problem) throw new OAuthError(400, 'invalid_redirect_uri', problem);
    }
    if (meta.grant_types?.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
      throw new OAuthError(400, 'invalid_client_metadata', 'only the authorization_code and refresh_token grant types are offered');
    }
    const now = Date.now();
    const max = this.maxPending();
    if (await this.store.count('client:pending:', now) >= max) {
      this.log.warn('OAuth client registration refused: too many clients wait for approval');
      throw new OAuthError(429, 'temporarily_unavailable', `${max} registered clients already wait for approval; approve or let them expire (a day) first`);
    }
    const client: Client = {
      client_id: newSecret('tgc_').slice(0, 28),
      ...(meta.client_name ? { client_name: meta.client_name } : {}),
      redirect_uris: meta.redirect_uris,
      client_id_issued_at: Math.floor(now / 1000),
    };
    await this.store.put(`client:pending:${client.client_id}`, JSON.stringify(client), now + PENDING_MS);
    sendJson(res, 201, { ...client, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' });
  }

  /** A registered client, approved or still waiting for approval. */
  async find(id: string | undefined): Promise<Client | undefined> {
    if (!id) return undefined;
    const now = Date.now();
    const raw = (await this.store.get(`client:ok:${id}`, now)) ?? (await this.store.get(`client:pending:${id}`, now));
    return raw ? JSON.parse(raw) as Client : undefined;
  }

  async approve(client: Client, now: number): Promise<void> {
    await this.store.delete(`client:pending:${client.client_id}`);
    await this.store.put(`client:ok:${client.client_id}`, JSON.stringify(client), now + APPROVED_MS);
  }
}
