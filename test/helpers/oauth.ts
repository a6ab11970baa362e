import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';

export interface Consent {
  adminToken: string;
  label: string;
  tags?: string;
  policy?: string;
  decision?: 'approve' | 'deny';
}

/**
 * Signs in on the gateway's consent page as a person would: loads the page the authorization URL
 * shows, posts its form back with the admin token and the grant's fields, and returns where the
 * gateway sends the browser (the client's redirect URI with a code, or an error).
 */
export async function approveOnConsentPage(authorizationUrl: URL, consent: Consent): Promise<{ status: number; location?: URL; page: string }> {
  const page = await fetch(authorizationUrl, { redirect: 'manual' });
  const html = await page.text();
  if (page.status !== 200) return { status: page.status, location: page.headers.get('location') ? new URL(page.headers.get('location')!) : undefined, page: html };
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) form.set(unescapeHtml(m[1]), unescapeHtml(m[2]));
  form.set('admin_token', consent.adminToken);
  form.set('label', consent.label);
  form.set('tags', consent.tags ?? '');
  form.set('policy', consent.policy ?? '');
  form.set('decision', consent.decision ?? 'approve');
  const action = new URL(/<form method="post" action="([^"]+)">/.exec(html)![1], authorizationUrl);
  const res = await fetch(action, { method: 'POST', body: form, redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  const location = res.headers.get('location');
  return { status: res.status, location: location ? new URL(location) : undefined, page: await res.text() };
}

function unescapeHtml(s: string): string {
  return s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/**
 * The SDK's OAuthClientProvider for a test: everything in memory; the "browser" is
 * approveOnConsentPage, and the code it brings back waits in `code` for finishAuth.
 */
export class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  code?: string;
  lastRedirect?: { status: number; location?: URL; page: string };

  constructor(private readonly consent: Consent, readonly redirectUrl = 'http://127.0.0.1:18699/callback') {}

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'sdk test client', redirect_uris: [String(this.redirectUrl)], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info: OAuthClientInformationMixed) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  async redirectToAuthorization(url: URL): Promise<void> {
    this.lastRedirect = await approveOnConsentPage(url, this.consent);
    this.code = this.lastRedirect.location?.searchParams.get('code') ?? undefined;
  }
}
