import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAbsolute, resolve } from 'node:path';
import type { AuditLog } from '../audit/index.js';
import { addressKey, clientAddress } from '../http/client-address.js';
import { durationToMs, type GatewayConfig, type OAuthConfig } from '../config/gateway.js';
import type { Grants } from '../grants/grants.js';
import type { Logger } from '../log.js';
import { formatIssue, loadPolicyFile } from '../policy/index.js';
import type { OAuthStore } from '../state/types.js';
import { ClientMetadataDocuments } from './client-metadata.js';
import { ClientRegistry, newSecret, type Client } from './clients.js';
import { renderConsent, renderProblem } from './consent.js';
import { OAuthError, readForm, redirect, sameSecret, sendJson, sendOAuthError, sha256, singleValued } from './http.js';
import { serverOfPath } from './resource.js';

export type BuiltinConfig = Extract<OAuthConfig, { builtin: true }>;

export interface BuiltinDeps {
  config: () => GatewayConfig;
  grants: Grants;
  store: OAuthStore;
  audit: AuditLog;
  log: Logger;
}

interface CodeRecord { clientId: string; redirectUri: string; challenge: string; server: string; resource: string; label: string; tags: string[]; policy?: string }
interface RefreshRecord { clientId: string; grantId: string; server: string; resource: string }

const CODE_MS = 60_000;
const SIGN_IN_FAILURES = 10;

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const CONSENT_FIELDS = new Set(['admin_token', 'label', 'tags', 'policy', 'decision']);
/** The authorization request's own parameters, without the consent form's fields. */
const requestOnly = (params: Map<string, string>) => new Map([...params].filter(([k]) => !CONSENT_FIELDS.has(k)));

/**
 * The gateway's own OAuth 2.1 authorization server, for teams without an identity provider:
 * dynamic registration of public clients, authorization code with PKCE (S256 only), a consent
 * page where a person signs in with the admin token, refresh tokens rotated on every use.
 * The access token is a grant's token: hashed at rest, listed and revoked with `toolgate grants`.
 */
export class BuiltinAuthorizationServer {
  private readonly signInFailures = new Map<string, { count: number; until: number }>();
  private readonly clients: ClientRegistry;

  constructor(private readonly deps: BuiltinDeps) {
    this.clients = new ClientRegistry(deps.store, () => ({
      maxPending: this.settings.max_pending_clients,
      pendingMs: durationToMs(this.settings.pending_client_ttl),
      perAddress: this.settings.registrations_per_address,
      windowMs: durationToMs(this.settings.registration_window),
    }), deps.log, new ClientMetadataDocuments(() => ({
      enabled: this.settings.client_metadata_documents,
      allowHosts: this.settings.client_metadata_allow_hosts,
    }), deps.log));
  }

  private get settings(): BuiltinConfig {
    return this.deps.config().oauth as BuiltinConfig;
  }

  metadata(issuer: string): Record<string, unknown> {
    return {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: this.settings.client_metadata_documents,
    };
  }

  /** Answers the authorization server's endpoints; false for any other path. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL, issuer: string): Promise<boolean> {
    try {
      switch (url.pathname) {
        case '/.well-known/oauth-authorization-server':
          sendJson(res, 200, this.metadata(issuer), { 'cache-control': 'max-age=300' });
          return true;
        case '/oauth/register': return await this.only(req, 'POST', () => this.clients.register(req, res));
        case '/oauth/authorize':
          if (req.method === 'GET') await this.authorizePage(res, requestOnly(singleValued(url.searchParams)), issuer, addressKey(clientAddress(req)));
          else await this.only(req, 'POST', async () => this.decide(req, res, await readForm(req), issuer));
          return true;
        case '/oauth/token': return await this.only(req, 'POST', () => this.token(req, res, issuer));
        case '/oauth/revoke': return await this.only(req, 'POST', () => this.revoke(req, res));
        default: return false;
      }
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      if (url.pathname === '/oauth/authorize') renderProblem(res, err.status, err.message);
      else sendOAuthError(res, err);
      return true;
    }
  }

  private async only(req: IncomingMessage, method: string, run: () => Promise<void>): Promise<true> {
    if (req.method !== method) throw new OAuthError(405, 'invalid_request', `use ${method}`);
    await run();
    return true;
  }

  /**
   * Checks an authorization request. Problems with the client or its redirect URI are shown on
   * the page (sending the browser to an unverified URI would make the gateway an open redirector),
   * and so is every problem of a client nobody has approved yet: anyone can register a redirect
   * URI, so until a person approves the client the gateway sends no browser to it. An approved
   * client's other problems go back to it as OAuth errors.
   */
  private async checkRequest(q: Map<string, string>, issuer: string, from: string): Promise<{ client: Client; approved: boolean; redirectUri: string; server: string; resource: string } | { back: string }> {
    const client = await this.clients.find(q.get('client_id'), from);
    if (!client) throw new OAuthError(400, 'invalid_client', 'unknown client_id: register the client first (it may have expired unapproved)');
    const redirectUri = q.get('redirect_uri') ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0] : '');
    if (!client.redirect_uris.includes(redirectUri)) throw new OAuthError(400, 'invalid_request', 'redirect_uri is not one this client registered');
    const approved = await this.clients.isApproved(client.client_id);
    const back = (error: string, description: string) => {
      if (!approved) throw new OAuthError(400, error, `${description} (${error}; this client is not approved yet, so the browser is not sent back to it)`);
      const to = new URL(redirectUri);
      to.searchParams.set('error', error);
      to.searchParams.set('error_description', description);
      if (q.has('state')) to.searchParams.set('state', q.get('state')!);
      to.searchParams.set('iss', issuer);
      return { back: to.href };
    };
    if (q.get('response_type') !== 'code') return back('unsupported_response_type', 'only response_type=code is offered');
    if (q.get('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(q.get('code_challenge') ?? '')) {
      return back('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256');
    }
    const resource = q.get('resource');
    if (!resource) return back('invalid_target', 'the resource parameter (RFC 8707) must name the MCP server URL');
    const target = this.resourceTarget(resource, issuer);
    if (!target) return back('invalid_target', `${resource} is not a server of this gateway that takes grants`);
    return { client, approved, redirectUri, server: target.server, resource: target.resource };
  }

  /** The server an RFC 8707 resource indicator names, on this gateway; undefined otherwise. */
  private resourceTarget(resource: string, issuer: string): { server: string; resource: string } | undefined {
    let url: URL;
    try { url = new URL(resource); } catch { return undefined; }
    if (url.origin !== new URL(issuer).origin || url.search || url.hash) return undefined;
    const server = serverOfPath(url.pathname);
    const config = server === undefined ? undefined : Object.hasOwn(this.deps.config().servers, server) ? this.deps.config().servers[server] : undefined;
    if (!config || config.auth === 'none') return undefined;
    return { server: server!, resource: `${url.origin}${url.pathname.replace(/\/+$/, '')}` };
  }

  private async authorizePage(res: ServerResponse, q: Map<string, string>, issuer: string, from: string): Promise<void> {
    const checked = await this.checkRequest(q, issuer, from);
    if ('back' in checked) return redirect(res, checked.back);
    const name = checked.client.client_name ?? checked.client.client_id;
    renderConsent(res, { clientName: name, clientId: checked.client.client_id, redirectUri: checked.redirectUri, server: checked.server, request: q, label: name.slice(0, 100), tags: '', policy: '' });
  }

  /** The consent form's answer: a wrong admin token shows the page again; deny and approve go back to the client. */
  private async decide(req: IncomingMessage, res: ServerResponse, form: Map<string, string>, issuer: string): Promise<void> {
    const request = requestOnly(form);
    const checked = await this.checkRequest(request, issuer, addressKey(clientAddress(req)));
    if ('back' in checked) return redirect(res, checked.back);
    const { client, approved, redirectUri, server, resource } = checked;
    const to = new URL(redirectUri);
    if (request.has('state')) to.searchParams.set('state', request.get('state')!);
    to.searchParams.set('iss', issuer);
    if (form.get('decision') === 'deny') {
      if (!approved) return renderProblem(res, 403, 'The request was denied. This client was never approved, so the browser is not sent back to it.');
      to.searchParams.set('error', 'access_denied');
      to.searchParams.set('error_description', 'the request was denied on the consent page');
      return redirect(res, to.href);
    }
    const label = (form.get('label') ?? '').trim();
    const tags = (form.get('tags') ?? '').split(',').map((t) => t.trim()).filter(Boolean);
    const policyText = (form.get('policy') ?? '').trim();
    const view = { clientName: client.client_name ?? client.client_id, clientId: client.client_id, redirectUri, server, request, label, tags: tags.join(', '), policy: policyText };
    const ip = addressKey(clientAddress(req));
    const failures = this.signInFailures.get(ip);
    if (failures && failures.count >= SIGN_IN_FAILURES && failures.until > Date.now()) return renderConsent(res, { ...view, error: 'too many wrong admin tokens; try again in a minute' }, 429);
    const admin = this.deps.config().admin?.token;
    if (!admin || !sameSecret(form.get('admin_token') ?? '', admin)) {
      const f = failures && failures.until > Date.now() ? failures : { count: 0, until: Date.now() + 60_000 };
      f.count++;
      this.signInFailures.set(ip, f);
      this.deps.audit.append({ kind: 'auth', server, decision: 'deny', message: `OAuth consent: wrong admin token (from ${ip})` });
      return renderConsent(res, { ...view, error: 'that is not the admin token' }, 401);
    }
    if (!label || label.length > 100) return renderConsent(res, { ...view, error: 'the grant needs a label of at most 100 characters' }, 400);
    let policy: string | undefined;
    if (policyText) {
      policy = isAbsolute(policyText) ? policyText : resolve(policyText);
      const loaded = loadPolicyFile(policy);
      if (!loaded.ok) return renderConsent(res, { ...view, error: `the policy is not usable: ${formatIssue(policyText, loaded.issues[0])}` }, 400);
    }
    const now = Date.now();
    const code = newSecret('tgac_');
    const record: CodeRecord = { clientId: client.client_id, redirectUri, challenge: request.get('code_challenge')!, server, resource, label, tags, ...(policy ? { policy } : {}) };
    await this.deps.store.put(`code:${sha256(code)}`, JSON.stringify(record), now + CODE_MS);
    await this.clients.approve(client, now);
    this.deps.audit.append({ kind: 'grant', server, grant: label, decision: 'allow', message: `OAuth consent: client ${client.client_id} approved` });
    to.searchParams.set('code', code);
    redirect(res, to.href);
  }

  private async token(req: IncomingMessage, res: ServerResponse, issuer: string): Promise<void> {
    const form = await readForm(req);
    const type = form.get('grant_type');
    const client = await this.clients.find(form.get('client_id'), addressKey(clientAddress(req)));
    if (!client) throw new OAuthError(401, 'invalid_client', 'unknown client_id');
    if (type === 'authorization_code') return this.exchangeCode(res, form, client, issuer);
    if (type === 'refresh_token') return this.refresh(res, form, client, issuer);
    throw new OAuthError(400, 'unsupported_grant_type', 'grant_type is authorization_code or refresh_token');
  }

  private checkResource(form: Map<string, string>, expected: string, issuer: string): void {
    const resource = form.get('resource');
    if (resource !== undefined && this.resourceTarget(resource, issuer)?.resource !== expected) {
      throw new OAuthError(400, 'invalid_target', `this grant is for ${expected} only`);
    }
  }

  private async exchangeCode(res: ServerResponse, form: Map<string, string>, client: Client, issuer: string): Promise<void> {
    const now = Date.now();
    const raw = await this.deps.store.take(`code:${sha256(form.get('code') ?? '')}`, now);
    if (!raw) throw new OAuthError(400, 'invalid_grant', 'the authorization code is unknown, used or expired');
    const code = JSON.parse(raw) as CodeRecord;
    if (code.clientId !== client.client_id) throw new OAuthError(400, 'invalid_grant', 'the authorization code was issued to another client');
    if (form.has('redirect_uri') && form.get('redirect_uri') !== code.redirectUri) throw new OAuthError(400, 'invalid_grant', 'redirect_uri differs from the authorization request\'s');
    const verifier = form.get('code_verifier') ?? '';
    if (!VERIFIER.test(verifier) || !sameSecret(sha256(verifier), code.challenge)) throw new OAuthError(400, 'invalid_grant', 'code_verifier does not match the code_challenge');
    this.checkResource(form, code.resource, issuer);
    const ttl = durationToMs(this.settings.access_token_ttl);
    const { grant, token } = await this.deps.grants.create({ server: code.server, label: code.label, tags: code.tags, policy: code.policy, expiresInMs: ttl }, now);
    this.deps.log.info({ server: code.server, grant: code.label, client: client.client_id }, 'OAuth grant issued');
    await this.issue(res, token, ttl, { clientId: client.client_id, grantId: grant.id, server: code.server, resource: code.resource }, now);
  }

  /**
   * Rotation: each refresh token works once, and gives a new access token (the grant's token is
   * replaced, so the old one stops working) and a new refresh token. A refresh token presented a
   * second time means it leaked; the grant is revoked (OAuth 2.1 §4.3.1).
   */
  private async refresh(res: ServerResponse, form: Map<string, string>, client: Client, issuer: string): Promise<void> {
    const now = Date.now();
    const hash = sha256(form.get('refresh_token') ?? '');
    const raw = await this.deps.store.get(`refresh:${hash}`, now);
    if (!raw) {
      const reused = await this.deps.store.get(`refresh-used:${hash}`, now);
      if (reused) {
        await this.deps.grants.revokeId(reused, now);
        this.deps.audit.append({ kind: 'grant', decision: 'deny', message: `OAuth: a refresh token was used twice; grant ${reused} revoked` });
      }
      throw new OAuthError(400, 'invalid_grant', 'the refresh token is unknown, used or expired');
    }
    const record = JSON.parse(raw) as RefreshRecord;
    // Checked before the token is used up: a client's mistake must not cost it the grant.
    if (record.clientId !== client.client_id) throw new OAuthError(400, 'invalid_grant', 'the refresh token was issued to another client');
    this.checkResource(form, record.resource, issuer);
    if (!(await this.deps.store.take(`refresh:${hash}`, now))) throw new OAuthError(400, 'invalid_grant', 'the refresh token was just used');
    await this.deps.store.put(`refresh-used:${hash}`, record.grantId, now + durationToMs(this.settings.refresh_token_ttl));
    const ttl = durationToMs(this.settings.access_token_ttl);
    const token = await this.deps.grants.reissue(record.grantId, ttl, now);
    if (!token) throw new OAuthError(400, 'invalid_grant', 'the grant was revoked');
    await this.issue(res, token, ttl, record, now);
  }

  private async issue(res: ServerResponse, accessToken: string, ttlMs: number, record: RefreshRecord, now: number): Promise<void> {
    const refreshToken = newSecret('tgr_');
    const refreshTtl = durationToMs(this.settings.refresh_token_ttl);
    await this.deps.store.put(`refresh:${sha256(refreshToken)}`, JSON.stringify(record), now + refreshTtl);
    await this.deps.store.put(`grant:${record.grantId}`, record.clientId, now + refreshTtl);
    sendJson(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: Math.floor(ttlMs / 1000), refresh_token: refreshToken });
  }

  /** RFC 7009: either token ends the whole grant. Unknown tokens are answered 200 too, as the RFC asks. */
  private async revoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    const token = form.get('token');
    if (!token) throw new OAuthError(400, 'invalid_request', 'token is required');
    const clientId = form.get('client_id');
    const now = Date.now();
    let grantId: string | undefined;
    const refresh = await this.deps.store.get(`refresh:${sha256(token)}`, now);
    if (refresh) grantId = (JSON.parse(refresh) as RefreshRecord).grantId;
    else grantId = (await this.deps.grants.byToken(token))?.id;
    if (grantId && (await this.deps.store.get(`grant:${grantId}`, now)) === clientId) {
      await this.deps.store.delete(`refresh:${sha256(token)}`);
      await this.deps.grants.revokeId(grantId, now);
      this.deps.audit.append({ kind: 'grant', decision: 'deny', message: `OAuth: client ${clientId} revoked grant ${grantId}` });
    }
    sendJson(res, 200, {});
  }
}
