import type { ServerResponse } from 'node:http';

/** What the consent page shows and carries back in its form. */
export interface ConsentView {
  clientName: string;
  clientId: string;
  redirectUri: string;
  server: string;
  /** The authorization request's own parameters, carried through the form unchanged. */
  request: Map<string, string>;
  label: string;
  tags: string;
  policy: string;
  error?: string;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]);

/**
 * Framing and scripts refused: the page takes the admin token, so no other site may wrap or script
 * it. The form may go to the gateway and, by the redirect that answers it, to the client.
 */
function pageHeaders(redirectUri?: string): Record<string, string> {
  let target = '';
  if (redirectUri) {
    const u = new URL(redirectUri);
    target = ` ${u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : u.protocol}`;
  }
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${target}; frame-ancestors 'none'`,
    // Not no-referrer: Chromium then sends `Origin: null` with the form, which the DNS-rebinding check refuses.
    'referrer-policy': 'same-origin',
  };
}

const STYLE = 'body{font:15px system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}'
  + 'label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}'
  + 'code{background:#f3f3f3;padding:0 .2rem}.err{color:#a00}.buttons{margin-top:1.2rem;display:flex;gap:.6rem}';

export function renderConsent(res: ServerResponse, v: ConsentView, status = 200): void {
  const hidden = [...v.request].map(([k, val]) => `<input type="hidden" name="${esc(k)}" value="${esc(val)}">`).join('');
  res.writeHead(status, pageHeaders(v.redirectUri));
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>toolgate: approve ${esc(v.clientName)}</title><style>${STYLE}</style></head><body>
<h1>Approve an MCP client</h1>
<p><strong>${esc(v.clientName)}</strong> (<code>${esc(v.clientId)}</code>) asks for access to the server <strong>${esc(v.server)}</strong>.
After approval the browser returns to <code>${esc(v.redirectUri)}</code>.</p>
<p>Approving creates a grant for this server: its calls are decided by the grant's policy and limits, it is listed by <code>toolgate grants list</code>, and <code>toolgate grants revoke</code> ends it.</p>
${v.error ? `<p class="err" role="alert">${esc(v.error)}</p>` : ''}
<form method="post" action="/oauth/authorize">${hidden}
<label for="admin_token">Admin token</label><input id="admin_token" name="admin_token" type="password" autocomplete="current-password" required>
<label for="label">Grant label</label><input id="label" name="label" value="${esc(v.label)}" required maxlength="100">
<label for="tags">Tags (comma-separated)</label><input id="tags" name="tags" value="${esc(v.tags)}">
<label for="policy">Policy file (optional; replaces the server's policy for this grant)</label><input id="policy" name="policy" value="${esc(v.policy)}">
<div class="buttons"><button name="decision" value="approve" type="submit">Approve</button><button name="decision" value="deny" type="submit" formnovalidate>Deny</button></div>
</form></body></html>`);
}

/** A request that cannot be sent back to its client (unknown client, unregistered redirect URI) is answered here, never redirected. */
export function renderProblem(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, pageHeaders());
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>toolgate: authorization refused</title><style>${STYLE}</style></head><body>
<h1>Authorization refused</h1><p class="err">${esc(message)}</p></body></html>`);
}
