// Small DOM and API helpers shared by every page. Text always goes in as text nodes, never as HTML.

/** h('a', {href: '#/x', class: 'y'}, 'text', child…) — attributes starting with "on" are listeners. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let csrf = null;
let onSignedOut = () => {};
export function setSession(token, signedOut) { csrf = token; if (signedOut) onSignedOut = signedOut; }

export class ApiError extends Error {
  constructor(status, message, data) { super(message); this.status = status; this.data = data; }
}

/** JSON to and from the admin API, with the session cookie and, for changes, the CSRF token. */
export async function api(path, { method = 'GET', body } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrf ?? '';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  const text = await res.text();
  let data = text;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  if (res.status === 401 && path.startsWith('/api/')) { onSignedOut(); throw new ApiError(401, 'signed out', data); }
  if (!res.ok) throw new ApiError(res.status, data?.error?.message ?? data?.error ?? `HTTP ${res.status}`, data);
  return data;
}

export function toast(text) {
  const el = document.getElementById('toast');
  el.textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.textContent = ''; }, 4000);
}

/** A modal question; resolves to false, or to true (or the reason typed, when asked for one). */
export function confirmDialog({ title, text, ok = 'Confirm', danger = true, reason = false }) {
  const dialog = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  const okButton = document.getElementById('confirm-ok');
  okButton.textContent = ok;
  okButton.className = danger ? 'danger' : '';
  const input = document.getElementById('confirm-reason');
  const label = document.getElementById('confirm-reason-label');
  input.hidden = label.hidden = !reason;
  input.value = '';
  dialog.returnValue = '';
  dialog.showModal();
  if (reason) input.focus();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      if (dialog.returnValue !== 'ok') resolve(false);
      else resolve(reason ? input.value.trim() : true);
    }, { once: true });
  });
}

export const badge = (text, cls = '') => h('span', { class: `badge ${cls}` }, text);
export const catBadge = (category, text = category) => badge(text, `cat-${category}`);
export const verdictBadge = (verdict) => badge(verdict, `v-${verdict.replace(/\s+/g, '-')}`);
export const decisionBadge = (decision) => badge(decision ?? '—', `d-${decision ?? 'none'}`);
export const CATEGORIES = ['Read', 'Write', 'Execute', 'Destructive', 'Financial'];

export function time(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
}
export function dateTime(iso) {
  return iso ? new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) : '—';
}

export function table(headers, rows, { caption, empty = 'Nothing here yet.' } = {}) {
  if (rows.length === 0) return h('p', { class: 'muted' }, empty);
  return h('div', { class: 'table-wrap' }, h('table', {},
    caption ? h('caption', { class: 'muted' }, caption) : null,
    h('thead', {}, h('tr', {}, headers.map((c) => h('th', { scope: 'col', class: c.startsWith('·') ? 'hide-phone' : '' }, c.replace(/^·/, ''))))),
    h('tbody', {}, rows)));
}

export const enc = encodeURIComponent;

// The server's display escaping (src/display): control, format (bidi, zero-width, tags), separators,
// private-use, unassigned, lone surrogates, blank-looking and variation characters.
// eslint-disable-next-line no-misleading-character-class
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\u00a0\u115f\u1160\u1680\u2000-\u200a\u202f\u205f\u3000\u3164\uffa0\u034f\u17b4\u17b5\u180b-\u180f\u2800\ufe00-\ufe0f\u{e0100}-\u{e01ef}]/gu;

/** Untrusted text as it is shown: every character that does not show as itself (bidi overrides included) as an escape. */
export function shown(text) {
  if (text === undefined || text === null) return '';
  return String(text).replace(HIDDEN, (c) => (c === '\n' ? '\\n' : c === '\t' ? '\\t' : c === '\r' ? '\\r' : `\\u{${c.codePointAt(0).toString(16).toUpperCase()}}`));
}

/** Text of several lines (JSON shown in a block): each line as shown(), the line breaks kept. */
export function shownLines(text) {
  return String(text ?? '').split('\n').map(shown).join('\n');
}

export function loading(text = 'Loading…') { return h('p', { class: 'muted', role: 'status' }, text); }
export function failure(err) { return h('p', { class: 'error', role: 'alert' }, err.message ?? String(err)); }

/** A read-only input with a copy button: for tokens shown once and snippets. */
export function copyable(label, value, { multiline = false } = {}) {
  const id = `copy-${Math.random().toString(36).slice(2)}`;
  const field = multiline
    ? h('textarea', { id, readonly: true, rows: value.split('\n').length, class: 'mono', spellcheck: 'false' }, value)
    : h('input', { id, readonly: true, value, spellcheck: 'false' });
  const button = h('button', {
    type: 'button', class: 'ghost small', 'aria-label': `Copy ${label}`,
    onclick: async () => {
      field.select();
      try { await navigator.clipboard.writeText(value); toast(`${label} copied`); } catch { document.execCommand('copy'); toast(`${label} selected: copy it now`); }
    },
  }, 'Copy');
  return h('div', { class: 'field' }, h('label', { for: id }, label), h('div', { class: 'secret' }, field, button));
}
