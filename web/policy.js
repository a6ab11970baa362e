// Policy: every tool's verdict, an editor validated as you type (the messages of
// `toolgate policy validate`), a dry run over the last day of audited calls, and save.
import { api, ApiError, confirmDialog, decisionBadge, enc, failure, h, loading, replace, shown, shownLines, table, time, toast, verdictBadge } from './ui.js';

function verdictTable(data) {
  if (data.error) return h('p', { class: 'error' }, data.error);
  return table(['tool', 'verdict', 'rule'], data.tools.map((t) => h('tr', {},
    h('td', { class: 'wrap' }, h('a', { href: `#/servers/${enc(data.server)}/tools/${enc(t.tool)}` }, shown(t.tool))),
    h('td', {}, verdictBadge(t.verdict), t.conditional ? h('span', { class: 'muted' }, ' (with conditions)') : ''),
    h('td', { class: 'mono wrap' }, shown(t.rule)))), { empty: 'The server lists no tools.' });
}

function issueList(issues) {
  return h('ul', { class: 'issues' }, issues.map((i) => h('li', { class: 'error mono' }, i.text)));
}

export async function render(view, server) {
  replace(view, h('h1', {}, 'Policy'), loading());
  const policies = await api('/api/policies');
  const pick = h('select', { id: 'policy-server', onchange: () => { location.hash = `#/policy/${enc(pick.value)}`; } },
    policies.map((p) => h('option', { value: p.server, selected: p.server === server }, p.server)));
  const head = [h('h1', {}, 'Policy'), h('div', { class: 'field' }, h('label', { for: 'policy-server' }, 'Server'), pick)];
  if (!server) {
    if (policies.length === 0) return replace(view, head, h('p', { class: 'muted' }, 'No servers are configured.'));
    location.replace(`#/policy/${enc(policies[0].server)}`);
    return;
  }
  replace(view, head, loading(`Listing the tools of ${server}…`));
  const data = await api(`/api/policies/${enc(server)}`);
  if (!data.editable) {
    replace(view, head,
      h('p', {}, `${server} runs under toolgate's recommended policy, recomputed from what it lists. To edit it, write it to a file (toolgate policy recommend) and name that file as the server's policy in the configuration.`),
      h('h2', {}, 'Every tool\'s verdict'), verdictTable(data),
      data.recommended ? [h('h2', {}, 'The recommended policy'), h('pre', {}, h('code', {}, shownLines(JSON.stringify(data.recommended, null, 2))))] : null);
    return;
  }

  const editor = h('textarea', { id: 'policy-text', class: 'editor', spellcheck: 'false', autocapitalize: 'off', 'aria-describedby': 'policy-status' }, data.text);
  const status = h('div', { id: 'policy-status', role: 'status', 'aria-live': 'polite' });
  const results = h('div', { 'aria-live': 'polite' });
  const saveButton = h('button', { type: 'button', id: 'policy-save' }, 'Save and reload');
  const dryButton = h('button', { type: 'button', class: 'ghost', id: 'policy-dry-run' }, 'Dry run (last day)');
  let valid = data.valid;
  let seq = 0;

  const showValidity = (result) => {
    valid = result.valid;
    saveButton.disabled = !valid;
    dryButton.disabled = !valid;
    replace(status, valid ? h('p', { class: 'ok' }, `✓ valid${result.hash ? ` (policy hash ${result.hash})` : ''}`) : [h('p', { class: 'error' }, `${result.issues.length} error${result.issues.length === 1 ? '' : 's'}: saving is refused until they are fixed`), issueList(result.issues)]);
  };
  const validate = async () => {
    const mine = ++seq;
    const result = await api('/api/policies/validate', { method: 'POST', body: { text: editor.value, file: data.file } });
    if (mine === seq) showValidity(result);
  };
  let timer;
  editor.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => validate().catch((err) => replace(status, failure(err))), 200); });
  editor.addEventListener('keydown', (e) => {
    // Tab indents; Escape then Tab leaves the editor (keyboard users are never trapped).
    if (e.key === 'Escape') { editor.dataset.leave = '1'; return; }
    if (e.key === 'Tab' && !e.shiftKey && !editor.dataset.leave) {
      e.preventDefault();
      editor.setRangeText('  ', editor.selectionStart, editor.selectionEnd, 'end');
      editor.dispatchEvent(new Event('input'));
    }
    delete editor.dataset.leave;
  });

  dryButton.addEventListener('click', async () => {
    replace(results, loading('Replaying the last day of audited calls…'));
    try {
      const r = await api(`/api/policies/${enc(server)}/replay`, { method: 'POST', body: { text: editor.value } });
      replace(results, h('h2', {}, 'Dry run'),
        h('p', { id: 'dry-run-summary' }, `${r.considered} audited call${r.considered === 1 ? '' : 's'} of the last day replayed: ${r.changes.length + r.more} would be decided differently.`),
        table(['time', 'grant', 'tool', 'was', 'would be', 'rule'], r.changes.map((c) => h('tr', {},
          h('td', {}, time(c.ts)), h('td', {}, c.grant ? shown(c.grant) : '—'), h('td', { class: 'wrap' }, shown(c.tool)),
          h('td', {}, decisionBadge(c.before.decision)), h('td', {}, decisionBadge(c.after.decision)),
          h('td', { class: 'mono wrap' }, shown(c.after.rule), c.argsKnown ? '' : h('span', { class: 'muted' }, ' (argument values not audited)')))), { empty: 'No call would be decided differently.' }));
    } catch (err) {
      if (err instanceof ApiError && err.data?.issues) showValidity(err.data);
      replace(results, failure(err));
    }
  });

  saveButton.addEventListener('click', async () => {
    if (!(await confirmDialog({ title: 'Save this policy?', text: `${data.file} is replaced and every live session of ${server} is decided by it from its next call.`, ok: 'Save', danger: false }))) return;
    try {
      const r = await api(`/api/policies/${enc(server)}`, { method: 'PUT', body: { text: editor.value } });
      toast(`Saved; policy ${r.hash} is live`);
      render(view, server);
    } catch (err) {
      if (err instanceof ApiError && err.data?.issues) showValidity(err.data);
      else toast(err.message);
    }
  });

  replace(view, head,
    h('p', { class: 'muted' }, 'File: ', h('code', {}, data.file)),
    h('div', { class: 'policy-layout' },
      h('section', {}, h('label', { for: 'policy-text' }, 'Policy (JSON or YAML)'), editor, status,
        h('div', { class: 'actions' }, dryButton, saveButton)),
      h('section', {}, h('h2', {}, 'Every tool\'s verdict'), verdictTable(data))),
    results);
  showValidity(data.valid ? { valid: true, hash: data.hash } : data);
  return () => clearTimeout(timer);
}
