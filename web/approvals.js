// Approvals: held calls with masked arguments, who asked, which rule and the time left;
// approve or deny with a reason; recent decisions below. Any change arrives over SSE.
import { api, badge, confirmDialog, dateTime, enc, failure, h, replace, table, toast } from './ui.js';

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
    title: `${verb === 'approve' ? 'Approve' : 'Deny'} ${a.tool} for ${a.grant}?`,
    text: verb === 'approve' ? 'The held call is forwarded to the server at once.' : 'The agent receives the denial with your reason.',
    ok: verb === 'approve' ? 'Approve' : 'Deny', danger: verb !== 'approve', reason: true,
  });
  if (reason === false) return;
  try {
    await api(`/api/approvals/${enc(a.id)}/${verb}`, { method: 'POST', body: { via: 'dashboard', ...(reason ? { reason } : {}) } });
    toast(`${verb === 'approve' ? 'Approved' : 'Denied'}: ${a.tool}`);
  } catch (err) { toast(err.message); }
}

export async function render(view) {
  const pendingBox = h('div', { id: 'pending', 'aria-live': 'polite' });
  const recentBox = h('div', { id: 'recent' });
  let current = { pending: [], recent: [] };

  const drawPending = () => {
    const now = Date.now();
    replace(pendingBox, current.pending.length === 0 ? h('p', { class: 'muted' }, 'No call is waiting for approval.') : h('div', { class: 'grid' }, current.pending.map((a) => h('section', { class: 'card', 'aria-label': `held call ${a.tool} by ${a.grant}` },
      h('h2', {}, a.tool, ' ', h('span', { class: 'muted' }, `on ${a.server}`)),
      h('dl', { class: 'facts' },
        h('dt', {}, 'who'), h('dd', {}, a.grant, a.client ? h('span', { class: 'muted' }, ` (${a.client})`) : ''),
        h('dt', {}, 'rule'), h('dd', { class: 'mono' }, a.rule),
        h('dt', {}, 'why'), h('dd', {}, a.reason || '—'),
        h('dt', {}, 'time left'), h('dd', { class: 'time-left' }, left(a.expiresAt, now)),
        h('dt', {}, 'id'), h('dd', { class: 'mono' }, a.id)),
      h('p', { class: 'muted' }, 'Arguments (secret-looking values masked)'),
      h('pre', {}, h('code', {}, JSON.stringify(a.args, null, 2))),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'danger', 'aria-label': `Deny ${a.tool} ${a.id}`, onclick: () => decide(a, 'deny') }, 'Deny'),
        h('button', { type: 'button', 'aria-label': `Approve ${a.tool} ${a.id}`, onclick: () => decide(a, 'approve') }, 'Approve'))))));
  };
  const drawRecent = () => replace(recentBox, table(['tool', 'status', 'reason', '·grant', '·by', '·decided'], current.recent.map((a) => h('tr', {},
    h('td', { class: 'wrap' }, a.tool), h('td', {}, badge(a.status, `d-${a.status === 'denied' ? 'deny' : a.status}`)), h('td', { class: 'wrap' }, a.decisionReason ?? '—'),
    h('td', { class: 'hide-phone' }, a.grant), h('td', { class: 'hide-phone' }, a.decidedBy ?? '—'), h('td', { class: 'hide-phone' }, dateTime(a.decidedAt ?? a.requestedAt)))),
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
