// Servers: grade, categories, auth posture, pins (review and accept), sessions, traffic, kill switches.
import { api, badge, confirmDialog, enc, failure, h, loading, replace, shown, toast } from './ui.js';
import { countBadges, gradeBox, postureText, serverRecord, toolRecord } from './records.js';

async function setKill(scope, on) {
  const where = scope === '*' ? 'every server of this gateway' : `server “${scope}”`;
  const answer = await confirmDialog({
    title: on ? 'Turn the kill switch on?' : 'Turn the kill switch off?',
    text: on ? `Every tools/call to ${where} will be denied until you turn it off.` : `Calls to ${where} will be decided by policy again.`,
    ok: on ? 'Stop all calls' : 'Resume calls', danger: on, reason: on,
  });
  if (answer === false) return false;
  await api('/api/kill-switch', { method: 'POST', body: { on, ...(scope === '*' ? {} : { server: scope }), ...(typeof answer === 'string' && answer ? { reason: answer } : {}) } });
  toast(on ? `Kill switch on for ${where}` : `Kill switch off for ${where}`);
  return true;
}

function killButton(scope, on, after) {
  return h('button', { type: 'button', class: on ? 'ghost small' : 'danger small', onclick: async () => { if (await setKill(scope, !on)) after(); } },
    on ? (scope === '*' ? 'Resume all servers' : 'Resume calls') : (scope === '*' ? 'Stop every server' : 'Kill switch'));
}

export async function list(view) {
  replace(view, h('h1', {}, 'Servers'), loading());
  const [servers, switches] = await Promise.all([api('/api/servers'), api('/api/kill-switch')]);
  const killed = new Map(switches.filter((s) => s.on).map((s) => [s.scope, s]));
  const again = () => list(view);
  const all = killed.get('*');
  const cards = servers.map((s) => {
    const body = h('div', {}, loading('Listing its tools…'));
    const on = killed.has(s.name);
    const card = h('section', { class: 'card', 'aria-labelledby': `srv-${s.name}` },
      h('div', { class: 'card-head' }, h('div', { class: 'grade', id: `grade-${s.name}` }, '·'), h('div', {},
        h('h2', { id: `srv-${s.name}` }, h('a', { href: `#/servers/${enc(s.name)}` }, s.name)),
        h('div', { class: 'muted' }, `${s.kind} · auth ${s.auth} · ${s.sessions} live session${s.sessions === 1 ? '' : 's'}`))),
      on || all ? h('p', { class: 'killed' }, h('strong', {}, 'Kill switch on'), (killed.get(s.name) ?? all).reason ? ` — ${(killed.get(s.name) ?? all).reason}` : '') : null,
      s.policyProblem ? h('p', { class: 'warning' }, h('strong', {}, 'Policy edit rejected'), ' — the previous version still decides. ', h('a', { href: `#/policy/${enc(s.name)}` }, 'Fix it')) : null,
      body,
      h('div', { class: 'links' },
        h('a', { href: `#/servers/${enc(s.name)}` }, 'Record'),
        h('a', { href: `#/policy/${enc(s.name)}` }, 'Policy'),
        h('a', { href: '#/live' }, 'Live traffic'),
        killButton(s.name, on, again)));
    api(`/api/servers/${enc(s.name)}`).then((d) => {
      card.querySelector(`#grade-${CSS.escape(s.name)}`).replaceWith(gradeBox(d.summary.grade));
      replace(body, countBadges(d.summary.counts), h('dl', { class: 'facts' },
        h('dt', {}, 'auth posture'), h('dd', {}, postureText(d.posture)),
        h('dt', {}, 'pins'), h('dd', {}, badge(d.pins.state, `pin-${d.pins.state}`), d.pins.state === 'changed' ? [' ', h('a', { href: `#/servers/${enc(s.name)}` }, 'review changes')] : ''),
        h('dt', {}, 'last minute'), h('dd', {}, `${d.lastMinute.calls} calls, ${d.lastMinute.denied} denied, ${d.lastMinute.held} held`),
        h('dt', {}, 'policy'), h('dd', { class: 'mono' }, shown(d.policy))));
    }, (err) => replace(body, failure(err)));
    return card;
  });
  const rejected = servers.filter((s) => s.policyProblem);
  replace(view, h('h1', {}, 'Servers'),
    rejected.map((s) => h('div', { class: 'banner warn', role: 'alert' }, h('div', {},
      h('strong', {}, `The last edit of ${s.name}'s policy was rejected`), ` (${new Date(s.policyProblem.since).toLocaleString()}): its calls are still decided by the previous version until the file is fixed.`,
      h('pre', { class: 'problem' }, s.policyProblem.problem)), h('a', { class: 'button small', href: `#/policy/${enc(s.name)}` }, 'Open the policy'))),
    h('div', { class: `banner${all ? ' alert' : ''}` },
      h('span', {}, all ? [h('strong', {}, 'Gateway-wide kill switch is on'), all.reason ? ` — ${all.reason}` : ''] : 'Gateway-wide kill switch is off: calls are decided by policy.'),
      killButton('*', !!all, again)),
    servers.length ? h('div', { class: 'grid' }, cards) : h('p', { class: 'muted' }, 'No servers are configured.'));
}

function pinSection(name, d, after) {
  const p = d.pins;
  if (p.state !== 'changed') {
    return h('p', {}, badge(p.state, `pin-${p.state}`), p.state === 'pinned' ? ' Every tool matches its pin.' : ' This server has no pins yet: accept its current tools to pin them.',
      p.state === 'unpinned' ? [' ', acceptButton(name, d.fingerprint, after, 'Pin current tools')] : null);
  }
  return h('div', { class: 'card' },
    h('p', {}, badge('changed', 'pin-changed'), ' Tool definitions differ from their pins. Review them below (each tool\'s record shows its current definition), then accept.'),
    h('ul', {},
      p.changed.map((t) => h('li', {}, 'changed: ', h('a', { href: `#/servers/${enc(name)}/tools/${enc(t)}` }, shown(t)))),
      p.added.map((t) => h('li', {}, 'new: ', h('a', { href: `#/servers/${enc(name)}/tools/${enc(t)}` }, shown(t)))),
      p.removed.map((t) => h('li', {}, `gone: ${shown(t)}`))),
    acceptButton(name, d.fingerprint, after, 'Accept these definitions'));
}

function acceptButton(name, fingerprint, after, label) {
  return h('button', { type: 'button', onclick: async () => {
    if (!(await confirmDialog({ title: `${label}?`, text: `The current definitions of ${name}'s tools become its pins; later changes are warned about or blocked again.`, ok: 'Accept', danger: false }))) return;
    try {
      await api(`/api/servers/${enc(name)}/pins`, { method: 'POST', body: { fingerprint } });
      toast('Pins updated');
      after();
    } catch (err) { toast(err.message); }
  } }, label);
}

export async function detail(view, name) {
  replace(view, loading(`Listing the tools of ${name}…`));
  const [d, r] = await Promise.all([api(`/api/servers/${enc(name)}`), api(`/api/servers/${enc(name)}/record`)]);
  const again = () => detail(view, name);
  replace(view,
    h('p', {}, h('a', { href: '#/servers' }, '← Servers')),
    serverRecord(r, (tool) => `#/servers/${enc(name)}/tools/${enc(tool)}`, [
      h('h2', {}, 'Now'),
      h('dl', { class: 'facts' },
      h('dt', {}, 'live sessions'), h('dd', {}, String(d.sessions)),
      h('dt', {}, 'last minute'), h('dd', {}, `${d.lastMinute.calls} calls, ${d.lastMinute.denied} denied, ${d.lastMinute.held} held`),
        h('dt', {}, 'kill switch'), h('dd', {}, d.killed ? h('strong', { class: 'killed' }, `on (${d.killed === '*' ? 'gateway-wide' : 'this server'})`) : 'off')),
      h('div', { class: 'links' }, h('a', { href: `#/policy/${enc(name)}` }, 'Policy and verdicts'), h('a', { href: '#/live' }, 'Live traffic'),
        h('button', { type: 'button', class: 'ghost small', onclick: async () => { await api(`/api/servers/${enc(name)}/record?refresh=1`); again(); } }, 'List again')),
      h('h2', {}, 'Pins'), pinSection(name, d, again),
    ]));
}

export async function tool(view, name, toolName) {
  replace(view, loading());
  const r = await api(`/api/servers/${enc(name)}/record`);
  const t = r.tools.find((x) => x.name === toolName);
  if (!t) throw new Error(`${name} lists no tool named ${toolName}`);
  replace(view, toolRecord(r, t, `#/servers/${enc(name)}`));
}
