// The dashboard's entry module: sign-in, navigation and the hash router. Each page module
// exports render(view, params) and may return a cleanup function (closing streams, timers).
import { api, h, replace, setSession, toast } from './ui.js';
import * as servers from './servers.js';
import * as records from './records.js';
import * as policy from './policy.js';
import * as live from './live.js';
import * as approvals from './approvals.js';
import * as grants from './grants.js';

const ROUTES = [
  [/^#\/servers\/([^/]+)\/tools\/(.+)$/, (v, m) => servers.tool(v, m[1], m[2]), 'servers'],
  [/^#\/servers\/([^/]+)$/, (v, m) => servers.detail(v, m[1]), 'servers'],
  [/^#\/servers$/, (v) => servers.list(v), 'servers'],
  [/^#\/records\/([^/]+)\/tools\/(.+)$/, (v, m) => records.tool(v, m[1], m[2]), 'records'],
  [/^#\/records\/([^/?]+)$/, (v, m) => records.detail(v, m[1]), 'records'],
  [/^#\/records(?:\?q=(.*))?$/, (v, m) => records.search(v, m[1] ?? ''), 'records'],
  [/^#\/policy(?:\/([^/]+))?$/, (v, m) => policy.render(v, m[1]), 'policy'],
  [/^#\/live$/, (v) => live.render(v), 'live'],
  [/^#\/approvals$/, (v) => approvals.render(v), 'approvals'],
  [/^#\/grants$/, (v) => grants.render(v), 'grants'],
];

const view = document.getElementById('view');
let cleanup = null;

async function route() {
  if (typeof cleanup === 'function') cleanup();
  cleanup = null;
  const hash = location.hash || '#/servers';
  const found = ROUTES.find(([re]) => re.test(hash));
  if (!found) { location.hash = '#/servers'; return; }
  const [re, render, section] = found;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#/${section}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  replace(view);
  const m = re.exec(hash).map((part, i) => (i > 0 && part !== undefined ? decodeURIComponent(part) : part));
  try {
    cleanup = await render(view, m);
  } catch (err) {
    if (err.status !== 401) replace(view, h('p', { class: 'error', role: 'alert' }, err.message));
  }
  const heading = view.querySelector('h1');
  if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
}

function showSignIn(message = '') {
  if (typeof cleanup === 'function') cleanup();
  cleanup = null;
  setSession(null);
  replace(view);
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('signin').hidden = false;
  document.getElementById('signin-error').textContent = message;
  document.getElementById('token').focus();
}

function signedIn(session) {
  setSession(session.csrf, () => showSignIn('Your session ended: sign in again.'));
  document.getElementById('signin').hidden = true;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  route();
}

document.getElementById('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = document.getElementById('token');
  const res = await fetch('/ui/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: input.value }), credentials: 'same-origin' });
  input.value = '';
  const body = await res.json().catch(() => ({}));
  if (res.ok) signedIn(body);
  else showSignIn((typeof body.error === 'string' ? body.error : body.error?.message) ?? `Sign-in failed (HTTP ${res.status})`);
});

document.getElementById('signout').addEventListener('click', async () => {
  try { await api('/ui/session', { method: 'DELETE' }); } catch { /* signed out either way */ }
  showSignIn();
  toast('Signed out');
});

window.addEventListener('hashchange', () => { if (document.getElementById('signin').hidden) route(); });

const res = await fetch('/ui/session', { credentials: 'same-origin' });
if (res.ok) signedIn(await res.json());
else showSignIn();
