import type { ServerResponse } from 'node:http';
import { escapeControls } from '../display/index.js';

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
/** Text a client chose (its name, redirect URI): control, invisible and bidi characters shown as escapes, then HTML-escaped. */
const show = (s: string) => esc(escapeControls(s));

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

/** The dashboard's look (web/app.css), inline: the page's CSP loads nothing else. Approve is the primary action, Deny a quiet one. */
const STYLE = ':root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--card:#f6f8fa;--line:#d0d7de;--accent:#2f6feb;--focus:#0969da;--bad:#cf222e;'
  + 'font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}'
  + '@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--card:#161b22;--line:#30363d;--accent:#4493f8;--focus:#4493f8;--bad:#f85149}}'
  + '*{box-sizing:border-box}body{margin:0;color:var(--fg);background:var(--bg)}'
  + '.top{display:flex;align-items:center;gap:.4rem;padding:.6rem 1rem;border-bottom:1px solid var(--line);background:var(--card);font-weight:700}'
  + '.top svg{flex:none}main{max-width:34rem;margin:2rem auto;padding:0 1rem}h1{font-size:1.5rem;margin:0 0 .75rem}'
  + '.card{background:var(--card);border:1px solid var(--line);border-radius:.6rem;padding:1rem 1.2rem;margin:1rem 0}'
  + 'p{overflow-wrap:anywhere}.card>p:first-child{margin-top:0}.card>p:last-child{margin-bottom:0}.muted{color:var(--muted)}'
  + 'label{display:block;font-weight:600;font-size:.9rem;margin:.8rem 0 .2rem}'
  + 'input{width:100%;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:.4rem;padding:.4rem .5rem}'
  + ':focus-visible{outline:2px solid var(--focus);outline-offset:2px}'
  + 'code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem;background:var(--bg);border:1px solid var(--line);border-radius:.3rem;padding:0 .25rem;overflow-wrap:anywhere}'
  + '.err{color:var(--bad);border:1px solid var(--bad);border-radius:.5rem;padding:.6rem .8rem}'
  + '.buttons{margin-top:1.2rem;display:flex;flex-direction:row-reverse;justify-content:flex-start;gap:.6rem;flex-wrap:wrap}'
  + 'button{font:inherit;padding:.45rem 1rem;border-radius:.4rem;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}'
  + 'button.approve{font-weight:600;min-width:8rem}button.ghost{background:transparent;color:var(--fg);border-color:var(--line)}';

const ICON = '<svg width="22" height="22" viewBox="0 0 32 32" aria-hidden="true"><rect width="32" height="32" rx="7" fill="#2f6feb"/><path d="M9 10h14M16 10v13M11 23h10" stroke="#fff" stroke-width="3" stroke-linecap="round" fill="none"/></svg>';

export function renderConsent(res: ServerResponse, v: ConsentView, status = 200): void {
  const hidden = [...v.request].map(([k, val]) => `<input type="hidden" name="${esc(k)}" value="${esc(val)}">`).join('');
  res.writeHead(status, pageHeaders(v.redirectUri));
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>toolgate: approve ${show(v.clientName)}</title><style>${STYLE}</style></head><body>
<header class="top">${ICON} Toolgate</header><main>
<h1>Approve an MCP client</h1>
<div class="card"><p><strong>${show(v.clientName)}</strong> (<code>${show(v.clientId)}</code>) asks for access to the server <strong>${show(v.server)}</strong>.
After approval the browser returns to <code>${show(v.redirectUri)}</code>.</p>
<p class="muted">Approving creates a grant for this server: its calls are decided by the grant's policy and limits, it is listed by <code>toolgate grants list</code>, and <code>toolgate grants revoke</code> ends it.</p></div>
${v.error ? `<p class="err" role="alert">${show(v.error)}</p>` : ''}
<form method="post" action="/oauth/authorize">${hidden}
<label for="admin_token">Admin token</label><input id="admin_token" name="admin_token" type="password" autocomplete="current-password" required>
<label for="label">Grant label</label><input id="label" name="label" value="${show(v.label)}" required maxlength="100">
<label for="tags">Tags (comma-separated)</label><input id="tags" name="tags" value="${esc(v.tags)}">
<label for="policy">Policy file (optional; replaces the server's policy for this grant)</label><input id="policy" name="policy" value="${esc(v.policy)}">
<div class="buttons"><button class="approve" name="decision" value="approve" type="submit">Approve</button><button class="ghost" name="decision" value="deny" type="submit" formnovalidate>Deny</button></div>
</form></main></body></html>`);
}

/** A request that cannot be sent back to its client (unknown client, unregistered redirect URI) is answered here, never redirected. */
export function renderProblem(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, pageHeaders());
  res.end(`<!doctype html><html><head><meta charset="utf-8"><title>toolgate: authorization refused</title><style>${STYLE}</style></head><body>
<header class="top">${ICON} Toolgate</header><main>
<h1>Authorization refused</h1><p class="err">${show(message)}</p></main></body></html>`);
}
