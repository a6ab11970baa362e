import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { addressKey, clientAddress } from '../http/client-address.js';
import type { Logger } from '../log.js';
import type { OAuthStore } from '../state/types.js';
import { formatDuration } from '../approvals/text.js';
import { ClientMetadataDocuments, isMetadataClientId } from './client-metadata.js';
import { OAuthError, readJson, sendJson } from './http.js';

export interface Client { client_id: string; client_name?: string; redirect_uris: string[]; client_id_issued_at: number }

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
export function redirectUriProblem(uri: string): string | undefined {
  let url: URL;
  try { url = new URL(uri); } catch { return `${uri} is not a URL`; }
  if (url.hash) return `${uri} has a fragment`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) ? undefined : `${uri}: plain http is allowed only to a loopback address`;
  if (['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:'].includes(url.protocol)) return `${uri}: the scheme ${url.protocol} is refused`;
  return undefined;
}

export interface RegistrationLimits {
  /** Registered clients that may wait for approval at once. */
  maxPending: number;
  /** How long a registration waits for approval before it is forgotten. */
  pendingMs: number;
  /** Registrations one client address (an IPv6 client: its /64) may make per window. */
  perAddress: number;
  windowMs: number;
}

/** The throttle's key for an address: the gateway's one key for per-address caps (IPv6: the /64). */
export const registrationKey = addressKey;

/**
 * Dynamically registered clients (RFC 7591), public only. A registration waits for approval on
 * the consent page for minutes (`pending_client_ttl`); at most `maxPending` wait at once, and one
 * address may register only `perAddress` clients per window, so anonymous registrations can
 * neither fill the store nor keep the pending list full for long. An approved client is kept a year.
 */
export class ClientRegistry {
  constructor(private readonly store: OAuthStore, private readonly limits: () => RegistrationLimits, private readonly log: Logger, private readonly documents?: ClientMetadataDocuments) {}

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
    const limits = this.limits();
    // Counted in the state store, so that every instance of a fleet sees the same registrations.
    const from = `register:${registrationKey(clientAddress(req))}/`;
    const client: Client = {
      client_id: newSecret('tgc_').slice(0, 28),
      ...(meta.client_name ? { client_name: meta.client_name } : {}),
      redirect_uris: meta.redirect_uris,
      client_id_issued_at: Math.floor(now / 1000),
    };
    // Both caps checked and both records written in one atomic step of the store: concurrent registrations cannot all pass on the same count.
    const full = await this.store.putIfUnder([
      { key: `${from}${randomBytes(8).toString('hex')}`, value: '1', expiresAt: now + limits.windowMs },
      { key: `client:pending:${client.client_id}`, value: JSON.stringify(client), expiresAt: now + limits.pendingMs },
    ], [{ prefix: from, max: limits.perAddress }, { prefix: 'client:pending:', max: limits.maxPending }], now);
    if (full === 0) {
      this.log.warn({ address: clientAddress(req) }, 'OAuth client registration refused: too many registrations from this address');
      throw new OAuthError(429, 'temporarily_unavailable', `this address registered ${limits.perAddress} clients recently; try again in ${formatDuration(limits.windowMs)}`, { 'retry-after': String(Math.ceil(limits.windowMs / 1000)) });
    }
    if (full === 1) {
      this.log.warn('OAuth client registration refused: too many clients wait for approval');
      throw new OAuthError(429, 'temporarily_unavailable', `${limits.maxPending} registered clients already wait for approval; approve one or try again within ${formatDuration(limits.pendingMs)}, when unapproved ones expire`, { 'retry-after': '60' });
    }
    sendJson(res, 201, { ...client, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' });
  }

  /**
   * A registered client, approved or still waiting for approval; or, for a client_id that is a URL,
   * the client its metadata document describes (fetched and checked; OAuthError when unusable).
   * `from`: the requesting address's key (metadata documents are fetched at most so often per address).
   */
  async find(id: string | undefined, from?: string): Promise<Client | undefined> {
    if (!id) return undefined;
    if (isMetadataClientId(id)) return this.documents ? this.documents.client(id, from) : undefined;
    const now = Date.now();
    const raw = (await this.store.get(`client:ok:${id}`, now)) ?? (await this.store.get(`client:pending:${id}`, now));
    return raw ? JSON.parse(raw) as Client : undefined;
  }

  /** Whether a person approved this client on the consent page: until then its redirect URIs are not trusted. */
  async isApproved(id: string): Promise<boolean> {
    return (await this.store.get(`client:ok:${id}`, Date.now())) !== null;
  }

  async approve(client: Client, now: number): Promise<void> {
    await this.store.delete(`client:pending:${client.client_id}`);
    await this.store.put(`client:ok:${client.client_id}`, JSON.stringify(client), now + APPROVED_MS);
  }
}
