// Issue 23 #21: the OAuth consent page looks like the dashboard, and Approve is the primary action.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { renderConsent } from '../src/auth/consent.js';

function rendered(clientName = 'Agent <b>', redirectUri = 'http://127.0.0.1:9/cb'): { headers: Record<string, string>; body: string } {
  const out = { headers: {} as Record<string, string>, body: '' };
  const res = { writeHead: (_s: number, h: Record<string, string>) => { out.headers = h; }, end: (b: string) => { out.body = b; } } as unknown as ServerResponse;
  renderConsent(res, { clientName, clientId: 'c1', redirectUri, server: 'github', request: new Map([['state', 'x\u202Ey']]), label: clientName, tags: '', policy: '' });
  return out;
}

describe('consent page', () => {
  it('Approve is the primary button and Deny a quiet one; styled inline with the dashboard palette, still under a CSP that loads nothing', () => {
    const { headers, body } = rendered();
    assert.match(body, /<button class="approve" name="decision" value="approve" type="submit">Approve<\/button><button class="ghost" name="decision" value="deny"/);
    assert.match(body, /button\.ghost\{background:transparent/);
    assert.match(body, /--accent:#2f6feb/, 'the dashboard accent');
    assert.match(body, /prefers-color-scheme:dark/);
    assert.match(headers['content-security-policy'], /default-src 'none'; style-src 'unsafe-inline'/);
    assert.match(body, /Agent &lt;b&gt;/, 'still escaped');
  });

  it('a client name or redirect URI with bidi, invisible or control characters is shown escaped: a registrant cannot reverse the page (issue 23 #7, found by a new user)', () => {
    const { body } = rendered('Evil \u202Eexe\u200B\x1b[2K', 'http://127.0.0.1:9/\u202Ebc');
    const visible = body.replace(/<input type="hidden"[^>]*>/g, '');
    for (const c of ['\u202E', '\u200B', '\x1b']) assert.ok(!visible.includes(c), `no raw ${JSON.stringify(c)} outside the carried request`);
    assert.match(body, /<title>toolgate: approve Evil \\u\{202E\}exe\\u\{200B\}\\u\{1B\}\[2K<\/title>/);
    assert.match(body, /returns to <code>http:\/\/127\.0\.0\.1:9\/\\u\{202E\}bc<\/code>/);
    assert.match(body, /name="state" value="x\u202Ey"/, 'the request is carried back unchanged');
  });
});
