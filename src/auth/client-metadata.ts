import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import type { Logger } from '../log.js';
import { redirectUriProblem, type Client } from './clients.js';
import { OAuthError } from './http.js';

/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document; the MCP 2026-07-28
 * revision prefers them to dynamic registration): a client_id that is an https URL names a JSON
 * document, hosted by the client, that the authorization server fetches. The URL is chosen by
 * whoever sends an authorization request, so the fetch is an attacker's request made from the
 * gateway's network: https only, no redirects followed, addresses checked at connect time (so DNS
 * rebinding cannot swap in a private address after the check), 5 KiB and 5 seconds at most, a few
 * at once, and results (failures too) cached. Private, loopback and link-local addresses, and plain
 * http, are refused unless the host is listed in `client_metadata_allow_hosts`.
 */
export interface MetadataSettings {
  enabled: boolean;
  /** Hosts (as written in the URL, e.g. `127.0.0.1` or `clients.internal`) that may be http and resolve to private addresses. */
  allowHosts: string[];
}

export const MAX_DOCUMENT_BYTES = 5 * 1024;
const FETCH_MS = 5_000;
const MAX_CONCURRENT = 8;
/** Fetches (cache misses) one client address may cause per minute, so the gateway is nobody's anonymous GET relay. */
export const FETCHES_PER_ADDRESS = 20;
const ADDRESS_WINDOW_MS = 60_000;
const MAX_CACHED = 1_000;
const FAILURE_CACHE_MS = 30_000;
const MIN_CACHE_MS = 60_000;
const DEFAULT_CACHE_MS = 5 * 60_000;
const MAX_CACHE_MS = 60 * 60_000;

/** Addresses a fetch must not reach unless its host is allowed: this host, private networks, link-local, multicast, reserved. */
const PRIVATE = new BlockList();
for (const [net, prefix] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64]] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** Whether an address is one a fetch must not reach (IPv4-mapped and NAT64 IPv6 addresses judged by the IPv4 address inside). */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family !== 6) return true;
  const lower = address.toLowerCase();
  const embedded = /^(?:::ffff:|::ffff:0:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/u.exec(lower);
  if (embedded) return PRIVATE.check(embedded[1], 'ipv4');
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/u.exec(lower);
  if (hex) {
    const n = (parseInt(hex[1], 16) << 16 | parseInt(hex[2], 16)) >>> 0;
    return PRIVATE.check([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'), 'ipv4');
  }
  return PRIVATE.check(address, 'ipv6');
}

/** Whether a client_id names a metadata document rather than a registered client. */
export const isMetadataClientId = (id: string) => /^https?:\/\//iu.test(id);

/** Why a client_id URL is not one the gateway fetches; undefined when it is. */
export function clientIdUrlProblem(id: string, allowHosts: string[]): string | undefined {
  if (id.length > 512) return 'a client_id URL is at most 512 characters';
  let url: URL;
  try { url = new URL(id); } catch { return 'the client_id is not a URL'; }
  if (url.href !== id) return 'the client_id URL must be written in its normal form (as the document\'s client_id says it)';
  const allowed = allowHosts.includes(url.hostname) || allowHosts.includes(url.host);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed)) return 'a client_id URL must be https';
  if (url.username || url.password) return 'a client_id URL has no user or password';
  if (url.hash || url.search) return 'a client_id URL has no query and no fragment';
  if (url.pathname === '/' || /\/\.{1,2}(\/|$)/u.test(url.pathname)) return 'a client_id URL needs a path, without . or .. segments';
  return undefined;
}

const Document = z.looseObject({
  client_id: z.string(),
  redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
  client_name: z.string().max(200).optional(),
  token_endpoint_auth_method: z.literal('none').optional(),
  grant_types: z.array(z.enum(['authorization_code', 'refresh_token'])).optional(),
  response_types: z.array(z.literal('code')).optional(),
});

interface Cached { client?: Client; problem?: string; until: number }

/** Fetches, checks and caches client ID metadata documents. */
export class ClientMetadataDocuments {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<Cached>>();
  private readonly fetchesBy = new Map<string, { count: number; until: number }>();

  constructor(private readonly settings: () => MetadataSettings, private readonly log: Logger) {}

  /**
   * The client a metadata-document client_id names; OAuthError invalid_client when it cannot be used.
   * `from`: the requesting client's address key, for the per-address fetch limit.
   */
  async client(id: string, from = 'unknown'): Promise<Client> {
    const { enabled, allowHosts } = this.settings();
    if (!enabled) throw new OAuthError(400, 'invalid_client', 'this gateway does not use client ID metadata documents (client_metadata_documents: false): register the client');
    const problem = clientIdUrlProblem(id, allowHosts);
    if (problem) throw new OAuthError(400, 'invalid_client', problem);
    const now = Date.now();
    let entry = this.cache.get(id);
    if (!entry || entry.until <= now) {
      let pending = this.inflight.get(id);
      if (!pending) {
        if (this.inflight.size >= MAX_CONCURRENT) throw new OAuthError(503, 'temporarily_unavailable', 'too many client metadata documents are being fetched; try again shortly', { 'retry-after': '5' });
        this.countFetch(from, now);
        pending = this.load(id, allowHosts).finally(() => this.inflight.delete(id));
        this.inflight.set(id, pending);
      }
      entry = await pending;
      this.remember(id, entry);
    }
    if (!entry.client) throw new OAuthError(400, 'invalid_client', `the client metadata document at ${id} is not usable: ${entry.problem}`);
    return entry.client;
  }

  private countFetch(from: string, now: number): void {
    let seen = this.fetchesBy.get(from);
    if (!seen || seen.until <= now) {
      this.fetchesBy.delete(from);
      if (this.fetchesBy.size >= 10_000) this.fetchesBy.delete(this.fetchesBy.keys().next().value!);
      seen = { count: 0, until: now + ADDRESS_WINDOW_MS };
      this.fetchesBy.set(from, seen);
    }
    if (++seen.count > FETCHES_PER_ADDRESS) {
      throw new OAuthError(429, 'temporarily_unavailable', `this address made the gateway fetch ${FETCHES_PER_ADDRESS} client metadata documents in the last minute; try again shortly`, { 'retry-after': String(Math.ceil((seen.until - now) / 1000)) });
    }
  }

  private remember(id: string, entry: Cached): void {
    this.cache.delete(id);
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(id, entry);
  }

  private async load(id: string, allowHosts: string[]): Promise<Cached> {
    try {
      const { body, maxAgeMs } = await fetchDocument(new URL(id), allowHosts);
      let json: unknown;
      try { json = JSON.parse(body); } catch { throw new Error('the document is not JSON'); }
      const parsed = Document.safeParse(json);
      if (!parsed.success) throw new Error('the document needs client_id, redirect_uris (1 to 10), token_endpoint_auth_method none (public clients only), and the code grant');
      const doc = parsed.data;
      if (doc.client_id !== id) throw new Error('its client_id is not the URL it was fetched from');
      if ('client_secret' in doc || 'client_secret_expires_at' in doc) throw new Error('a client metadata document carries no client_secret');
      for (const uri of doc.redirect_uris) {
        const problem = redirectUriProblem(uri);
        if (problem) throw new Error(problem);
      }
      const client: Client = { client_id: id, ...(doc.client_name ? { client_name: doc.client_name } : {}), redirect_uris: doc.redirect_uris, client_id_issued_at: Math.floor(Date.now() / 1000) };
      return { client, until: Date.now() + maxAgeMs };
    } catch (err) {
      const problem = err instanceof Error ? err.message : String(err);
      this.log.warn({ client_id: id, problem }, 'client metadata document refused');
      return { problem, until: Date.now() + FAILURE_CACHE_MS };
    }
  }
}

/** How long a document may be cached: its Cache-Control max-age, kept between a minute and an hour. */
function cacheMs(res: IncomingMessage): number {
  const cc = String(res.headers['cache-control'] ?? '');
  if (/no-store|no-cache/iu.test(cc)) return MIN_CACHE_MS;
  const m = /max-age=(\d+)/iu.exec(cc);
  const ms = m ? Number(m[1]) * 1000 : DEFAULT_CACHE_MS;
  return Math.min(MAX_CACHE_MS, Math.max(MIN_CACHE_MS, ms));
}

/** One GET, no redirects, the connection's address checked when it is resolved, size and time bounded. */
function fetchDocument(url: URL, allowHosts: string[]): Promise<{ body: string; maxAgeMs: number }> {
  const allowed = allowHosts.includes(url.hostname) || allowHosts.includes(url.host);
  const literal = url.hostname.replace(/^\[|\]$/gu, '');
  if (isIP(literal) && !allowed && isPrivateAddress(literal)) return Promise.reject(new Error(`${literal} is a private address`));
  // Runs for every connection the request opens: the address connected to is the one checked.
  const lookup = (hostname: string, options: { all?: boolean }, cb: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { all: true }, (err, addresses) => {
      if (err) return cb(err, '');
      const usable = allowed ? addresses : addresses.filter((a) => !isPrivateAddress(a.address));
      if (usable.length === 0 || usable.length !== addresses.length) return cb(new Error(`${hostname} resolves to a private address`), '');
      if (options.all) cb(null, usable);
      else cb(null, usable[0].address, usable[0].family);
    });
  };
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers: { accept: 'application/json', 'user-agent': 'toolgate' }, lookup: lookup as never, timeout: FETCH_MS }, (res) => {
      if (res.statusCode !== 200) { res.resume(); return reject(new Error(`the document URL answered HTTP ${res.statusCode} (redirects are not followed)`)); }
      if (!/^application\/(?:[\w.+-]*\+)?json\b/iu.test(String(res.headers['content-type'] ?? ''))) { res.resume(); return reject(new Error('the document is not served as application/json')); }
      if (Number(res.headers['content-length'] ?? 0) > MAX_DOCUMENT_BYTES) { reject(new Error(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`)); return res.destroy(); }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_DOCUMENT_BYTES) { reject(new Error(`the document is larger than ${MAX_DOCUMENT_BYTES} bytes`)); res.destroy(); } else chunks.push(c);
      });
      res.on('end', () => resolve({ body: Buffer.concat(chunks).toString('utf8'), maxAgeMs: cacheMs(res) }));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('the document URL closed the connection')));
    });
    const timer = setTimeout(() => { reject(new Error(`the document took longer than ${FETCH_MS / 1000} s`)); req.destroy(); }, FETCH_MS);
    req.on('timeout', () => req.destroy(new Error(`the document URL did not answer within ${FETCH_MS / 1000} s`)));
    req.on('error', (e) => reject(new Error(`the document could not be fetched: ${e.message}`)));
    req.on('close', () => clearTimeout(timer));
    req.end();
  });
}
