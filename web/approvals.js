// Approvals: held calls with every argument in full (wrapped, invisible and bidi characters as
// escapes, secrets masked and flagged), who asked, which rule and the time left; approve or deny
// with a reason; recent decisions below. Any change arrives over SSE. Every untrusted string
// passes shown().
import { api, badge, confirmDialog, dateTime, enc, failure, h, replace, shown, table, toast } from './ui.js';

function left(expiresAt, now) {
  const s = Math.max(0, Math.round((Date.parse(expiresAt) - now) / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** The admin API answers with a list of approvals, or with {pending, recent}. */
function split(data) {
  const all = Array.isArray(data) ? data : [...(data.pending ?? []), ...(data.recent ?? data.decided ?? [])];
  return {
    pending: all.filter((a) => a.status === 'pending').sort((a, b) => a.expiresAt.localeCompare(b.expiresAt)),
    recent: all.filter((a) => a.status !== 'pending').sort((a, b) => (b.decidedAt ?? b.requestedAt).localeCompare(a.decidedAt ?? a.requestedAt)).slice(0, 50),
  };
}

async function decide(a, verb) {
  const reason = await confirmDialog({
    title: `${verb === 'approve' ? 'Approve' : 'Deny'} ${shown(a.tool)} for ${shown(a.grant)}?`,
    text: verb === 'approve' ? 'The held call is forwarded to the server at once.' : 'The agent receives the denial with your reason.',
    ok: verb === 'approve' ? 'Approve' : 'Deny', danger: verb !== 'approve', reason: true,
  });
  if (reason === false) return;
  try {
    await api(`/api/approvals/${enc(a.id)}/${verb}`, { method: 'POST', body: { via: 'dashboard', ...(reason ? { reason } : {}) } });
    toast(`${verb === 'approve' ? 'Approved' : 'Denied'}: ${shown(a.tool)}`);
  } catch (err) { toast(err.message); }
}

export async function render(view) {
  const pendingBox = h('div', { id: 'pending', 'aria-live': 'polite' });
  const recentBox = h('div', { id: 'recent' });
  let current = { pending: [], recent: [] };

  const drawPending = () => {
    const now = Date.now();
    replace(pendingBox, current.pending.length === 0 ? h('p', { class: 'muted' }, 'No call is waiting for approval.') : h('div', { class: 'grid held' }, current.pending.map((a) => h('section', { class: 'card', 'aria-label': `held call ${shown(a.tool)} by ${shown(a.grant)}` },
      h('h2', { class: 'wrap' }, shown(a.tool), ' ', h('span', { class: 'muted' }, `on ${shown(a.server)}`)),
      h('dl', { class: 'facts' },
        h('dt', {}, 'who'), h('dd', {}, shown(a.grant), a.client ? h('span', { class: 'muted' }, ` (${shown(a.client)})`) : '',
          // Labels need not be unique (OAuth clients and identity providers choose them): the id tells grants apart.
          a.grantId && a.grantId !== a.grant ? h('div', { class: 'muted mono' }, `grant ${shown(a.grantId)}`) : ''),
        h('dt', {}, 'rule'), h('dd', { class: 'mono' }, shown(a.rule)),
        h('dt', {}, 'why'), h('dd', {}, shown(a.reason) || '—'),
        h('dt', {}, 'time left'), h('dd', { class: 'time-left' }, left(a.expiresAt, now)),
        h('dt', {}, 'id'), h('dd', { class: 'mono' }, a.id)),
      h('p', { class: 'muted' }, 'Arguments, in full'),
      a.masked?.length ? h('p', { class: 'masked', role: 'note' }, h('strong', {}, 'Masked: '), a.masked.map(shown).join('; ')) : null,
      h('pre', { class: 'args' }, h('code', {}, a.argsText ?? shown(JSON.stringify(a.args, null, 2)))),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'danger', 'aria-label': `Deny ${shown(a.tool)} ${a.id}`, onclick: () => decide(a, 'deny') }, 'Deny'),
        h('button', { type: 'button', 'aria-label': `Approve ${shown(a.tool)} ${a.id}`, onclick: () => decide(a, 'approve') }, 'Approve'))))));
  };
  const drawRecent = () => replace(recentBox, table(['tool', 'status', 'reason', '·grant', '·by', '·decided'], current.recent.map((a) => h('tr', {},
    h('td', { class: 'wrap' }, shown(a.tool)), h('td', {}, badge(a.status, `d-${a.status === 'denied' ? 'deny' : a.status}`)), h('td', { class: 'wrap' }, shown(a.decisionReason) || '—'),
    h('td', { class: 'hide-phone' }, shown(a.grant)), h('td', { class: 'hide-phone' }, shown(a.decidedBy) || '—'), h('td', { class: 'hide-phone' }, dateTime(a.decidedAt ?? a.requestedAt)))),
  { empty: 'No decisions yet.' }));

  const refresh = async () => {
    try {
      current = split(await api('/api/approvals'));
      drawPending();
      drawRecent();
    } catch (err) { if (err.status !== 401) replace(pendingBox, failure(err)); }
  };

  replace(view, h('h1', {}, 'Approvals'), h('h2', {}, 'Waiting'), pendingBox, h('h2', {}, 'Recent decisions'), recentBox);
  await refresh();
  const source = new EventSource('/api/approvals/stream');
  // `pending` for each new held call, `decided` for each decision, in any process on the same state.
  source.addEventListener('pending', () => refresh());
  source.addEventListener('decided', () => refresh());
  const tick = setInterval(() => {
    const now = Date.now();
    pendingBox.querySelectorAll('.time-left').forEach((el, i) => { if (current.pending[i]) el.textContent = left(current.pending[i].expiresAt, now); });
  }, 1000);
  return () => { source.close(); clearInterval(tick); };
}
