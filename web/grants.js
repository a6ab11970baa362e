// Grants: create (token shown once, with a .mcp.json snippet), list, rotate, revoke.
import { api, badge, confirmDialog, copyable, dateTime, enc, h, replace, shown, table, toast } from './ui.js';

/** Every server a grant opens (a multi-server grant lists them in servers). */
const serversOf = (g) => (g.servers && g.servers.length ? g.servers : [g.server]);

function snippet(grant) {
  const entry = (server) => [server, { type: 'http', url: `${location.origin}/mcp/${enc(server)}`, headers: { Authorization: `Bearer ${grant.token}` } }];
  return JSON.stringify({ mcpServers: Object.fromEntries(serversOf(grant).map(entry)) }, null, 2);
}

/** The token exactly once: it is not kept anywhere once this box is dismissed or the page is left. */
function shownOnce(box, grant, verb) {
  replace(box, h('section', { class: 'card once', 'aria-labelledby': 'once-title' },
    h('h2', { id: 'once-title' }, `Grant “${grant.label}” ${verb}`),
    h('p', {}, h('strong', {}, 'Copy the token now: it is shown only this once.'), ' Toolgate keeps only its hash.'),
    copyable('Token', grant.token),
    copyable('.mcp.json', snippet(grant), { multiline: true }),
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'ghost', onclick: () => replace(box) }, 'Done, hide it'))));
  box.querySelector('h2').focus?.();
}

export async function render(view) {
  const servers = await api('/api/servers');
  const once = h('div', {});
  const listBox = h('div', {});
  const status = (g) => (g.revokedAt ? badge('revoked', 'd-deny') : g.expiresAt && Date.parse(g.expiresAt) <= Date.now() ? badge('expired', 'd-timeout') : badge('active', 'd-allow'));

  const refresh = async () => {
    const grants = (await api('/api/grants')).sort((a, b) => (a.revokedAt ? 1 : 0) - (b.revokedAt ? 1 : 0) || b.createdAt.localeCompare(a.createdAt));
    replace(listBox, table(['label', 'server', 'status', '·tags', '·created', '·expires', 'actions'], grants.map((g) => h('tr', {},
      h('td', { class: 'wrap' }, shown(g.label), h('div', { class: 'muted mono' }, g.id)), h('td', {}, shown(serversOf(g).join(', '))), h('td', {}, status(g)),
      h('td', { class: 'hide-phone' }, shown(g.tags.join(', ')) || '—'), h('td', { class: 'hide-phone' }, dateTime(g.createdAt)), h('td', { class: 'hide-phone' }, g.expiresAt ? dateTime(g.expiresAt) : 'never'),
      h('td', {}, g.revokedAt ? '' : h('div', { class: 'badges' },
        h('button', { type: 'button', class: 'ghost small', 'aria-label': `Rotate ${g.label}`, onclick: async () => {
          if (!(await confirmDialog({ title: `Rotate “${shown(g.label)}”?`, text: 'A new token replaces the old one at once: clients using the old token are refused from their next request.', ok: 'Rotate' }))) return;
          const rotated = await api(`/api/grants/${enc(g.id)}/rotate`, { method: 'POST', body: {} });
          shownOnce(once, rotated, 'rotated');
          refresh();
        } }, 'Rotate'),
        h('button', { type: 'button', class: 'danger small', 'aria-label': `Revoke ${g.label}`, onclick: async () => {
          if (!(await confirmDialog({ title: `Revoke “${shown(g.label)}”?`, text: 'Its next request is refused. This cannot be undone.', ok: 'Revoke' }))) return;
          await api(`/api/grants/${enc(g.id)}`, { method: 'DELETE' });
          toast(`Grant ${shown(g.label)} revoked`);
          refresh();
        } }, 'Revoke'))))), { empty: 'No grants yet.' }));
  };

  const form = h('form', { class: 'card', 'aria-labelledby': 'new-grant' },
    h('h2', { id: 'new-grant' }, 'New grant'),
    h('div', { class: 'row' },
      h('div', { class: 'field' }, h('label', { for: 'g-server' }, 'Servers (one or more: one agent across them)'), h('select', { id: 'g-server', name: 'server', required: true, multiple: true, size: String(Math.min(4, Math.max(2, servers.length))) }, servers.map((s, i) => h('option', { value: s.name, ...(i === 0 ? { selected: true } : {}) }, s.name)))),
      h('div', { class: 'field' }, h('label', { for: 'g-label' }, 'Label'), h('input', { id: 'g-label', name: 'label', required: true, placeholder: 'ci-runner', autocomplete: 'off' })),
      h('div', { class: 'field' }, h('label', { for: 'g-tags' }, 'Tags (comma-separated)'), h('input', { id: 'g-tags', name: 'tags', autocomplete: 'off' })),
      h('div', { class: 'field' }, h('label', { for: 'g-expires' }, 'Expires'), h('select', { id: 'g-expires', name: 'expires' },
        [['', 'never'], ['1h', 'in an hour'], ['1d', 'in a day'], ['7d', 'in a week'], ['30d', 'in 30 days']].map(([v, t]) => h('option', { value: v }, t)))),
      h('button', { type: 'submit' }, 'Create grant')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const data = new FormData(form);
    try {
      const grant = await api('/api/grants', { method: 'POST', body: {
        servers: data.getAll('server'), label: String(data.get('label')).trim(),
        tags: String(data.get('tags')).split(',').map((t) => t.trim()).filter(Boolean), ...(data.get('expires') ? { expires: data.get('expires') } : {}),
      } });
      form.reset();
      shownOnce(once, grant, 'created');
      refresh();
    } catch (err) { toast(err.message); }
  });

  replace(view, h('h1', {}, 'Grants'), h('p', { class: 'muted' }, 'Each grant is a bearer token for one or more servers. Tokens are shown once and stored only as a hash.'), form, once, h('h2', {}, 'All grants'), listBox);
  await refresh();
  return () => replace(once);
}
