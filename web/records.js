// Server and tool records (the seeds' sections), and the catalog search.
import { api, badge, catBadge, CATEGORIES, enc, failure, h, loading, replace, shown, shownLines, table, verdictBadge } from './ui.js';

// Everything a record holds from the server (names, title, version, descriptions and what is quoted or
// derived from them) is untrusted: it passes shown(), so bidi and invisible characters show as escapes.
const title = (r) => shown(r.identity.serverInfo.title || r.identity.serverInfo.name);

function originText(r) {
  const o = r.identity.origin;
  if (o.kind === 'url') return shown(o.url);
  return shown(`${o.commandLine}${o.package ? ` (package ${o.package}${o.version ? `@${o.version}` : ''})` : ''}`);
}

export function postureText(a) {
  if (!a) return '—';
  if (a.kind === 'local-process') return shown(`local process${a.secretEnv?.length ? `; receives secret-looking variables: ${a.secretEnv.join(', ')}` : ''}`);
  return shown(`${a.kind}${a.tls === undefined ? '' : a.tls ? ', TLS' : ', no TLS'}${a.detail ? ` — ${a.detail}` : ''}`);
}

export function gradeBox(letter, big = false) {
  return h('div', { class: `grade grade-${letter}${big ? ' big' : ''}`, role: 'img', 'aria-label': `risk grade ${letter}` }, letter);
}

export function countBadges(counts) {
  return h('div', { class: 'badges', 'aria-label': 'tools per category' }, CATEGORIES.map((c) => catBadge(c, `${c} ${counts[c] ?? 0}`)));
}

/** What the gateway's configured policy does to a tool (records from the gateway carry `configured`; catalog records do not). */
function configuredVerdict(r, name) {
  return r.configured?.tools.find((x) => x.tool === name);
}

/** The server record: identity, auth posture, capabilities, categories, riskiest and every tool; `now` goes under the heading. */
export function serverRecord(r, toolHref, now = null) {
  const id = r.identity;
  const caps = r.capabilities;
  return h('article', {},
    h('div', { class: 'card-head' }, gradeBox(r.grade.letter, true), h('div', {},
      h('h1', {}, `${title(r)}: Risk & Policy`),
      h('p', { class: 'muted' }, shown(r.grade.reasons.join('; ')) || 'no risky tools'))),
    now,
    h('h2', {}, 'Identity'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'server'), h('dd', {}, shown(`${id.serverInfo.name} ${id.serverInfo.version ?? ''}`)),
      h('dt', {}, 'protocol'), h('dd', {}, shown(id.protocolVersion ?? 'unknown')),
      h('dt', {}, 'origin'), h('dd', {}, h('code', {}, originText(r))),
      h('dt', {}, 'fingerprint'), h('dd', {}, h('code', {}, id.fingerprint)),
      h('dt', {}, 'verification'), h('dd', {}, badge(id.verification, `pin-${id.verification}`), id.changedTools.length ? ` changed: ${shown(id.changedTools.join(', '))}` : '')),
    h('h2', {}, 'Auth posture'), h('p', {}, postureText(r.auth)),
    h('h2', {}, 'Capabilities'),
    h('p', {}, `tools ${caps.tools.count}, resources ${caps.resources.count} (+${caps.resources.templates} templates), prompts ${caps.prompts.count}, logging ${caps.logging ? 'yes' : 'no'}, completions ${caps.completions ? 'yes' : 'no'}`),
    h('h2', {}, 'Tools by category'), countBadges(r.counts),
    h('h2', {}, 'Every tool'),
    r.configured ? h('p', { class: 'muted' }, 'Verdict: what the configured policy (', h('code', {}, r.configured.file), ') does; recommended: what toolgate would recommend.') : null,
    r.configured
      ? table(['tool', 'category', '·risk', 'verdict', 'recommended'], r.tools.map((t) => {
        const v = configuredVerdict(r, t.name);
        return h('tr', {},
          h('td', { class: 'wrap' }, h('a', { href: toolHref(t.name) }, shown(t.name))),
          h('td', {}, catBadge(t.classification.category)), h('td', { class: 'hide-phone' }, t.classification.risk),
          h('td', {}, v ? [verdictBadge(v.verdict), v.conditional ? h('span', { class: 'muted' }, ' (with conditions)') : '', h('div', { class: 'muted mono small' }, shown(v.rule))] : h('span', { class: 'muted' }, 'not loaded')),
          h('td', { class: 'recommended' }, verdictBadge(t.verdict)));
      }))
      : table(['tool', 'category', '·risk', 'verdict'], r.tools.map((t) => h('tr', {},
        h('td', { class: 'wrap' }, h('a', { href: toolHref(t.name) }, shown(t.name))),
        h('td', {}, catBadge(t.classification.category)), h('td', { class: 'hide-phone' }, t.classification.risk), h('td', {}, verdictBadge(t.verdict))))),
    poisoningSection(r, toolHref),
    h('h2', {}, 'Recommended policy'),
    h('details', {}, h('summary', {}, `Show it (${Object.keys(r.recommendedPolicy.tools ?? {}).length} tool entries, default ${r.recommendedPolicy.default})`),
      h('pre', {}, h('code', {}, shownLines(JSON.stringify(r.recommendedPolicy, null, 2))))));
}

/** One poisoning finding: its level, kind, field and evidence, every hidden character shown as an escape. */
const findingItem = (f) => h('li', {}, badge(f.level, f.level === 'hide' ? 'v-Hidden' : 'v-Rate-limited'), ' ', shown(f.kind), ' in ', h('code', {}, shown(f.field)), ': ', shown(f.evidence));

/** The server's tools whose definitions carry text aimed at the model (src/poison), or nothing. */
function poisoningSection(r, toolHref) {
  const tools = r.tools.filter((t) => t.poisoning?.length);
  if (!tools.length) return null;
  return [h('h2', {}, 'Poisoning'),
    h('p', { class: 'muted' }, 'Text in these definitions is aimed at the model rather than the user. Under poisoned: hide (the recommended policy) a tool with a hide-level finding is removed from tools/list and denied.'),
    tools.map((t) => h('div', { class: 'card poisoning' }, h('p', {}, h('a', { href: toolHref(t.name) }, shown(t.name)), ' ', verdictBadge(t.verdict)), h('ul', {}, t.poisoning.map(findingItem))))];
}

/** A tool record with the seeds' sections: what it does, why it needs a policy, attacks, verdict, FAQ. */
export function toolRecord(r, t, backHref) {
  const c = t.classification;
  return h('article', {},
    h('p', {}, h('a', { href: backHref }, `← ${title(r)}`)),
    h('h1', {}, `${shown(t.name)} · ${title(r)}: Risk & Policy`),
    h('div', { class: 'badges' }, catBadge(c.category), badge(`${c.risk} risk`), h('span', { class: 'muted' }, `confidence ${c.confidence}`)),
    h('h2', {}, 'What it does'), h('p', {}, shown(t.description.trim()) || `${shown(t.name)} has no description.`),
    t.poisoning?.length ? [h('h2', {}, 'Poisoning'), h('div', { class: 'card poisoning' }, h('ul', {}, t.poisoning.map(findingItem)))] : null,
    h('h2', {}, 'Why it needs a policy'),
    h('div', { class: 'card' }, h('p', {}, shown(c.rationale)),
      c.signals.length ? h('p', { class: 'muted' }, shown(`Signals: ${c.signals.join(', ')}`)) : null,
      h('ul', {}, c.evidence.map((e) => h('li', {}, h('span', { class: 'muted' }, `from the ${shown(e.from)}: `), `“${shown(e.text)}”`)))),
    h('h2', {}, 'Attacks that exploit this kind of access'),
    t.attacks.length ? t.attacks.map((a) => h('details', {}, h('summary', {}, shown(a.title)), h('p', {}, shown(a.description)), h('p', {}, h('strong', {}, 'Blunted by: '), shown(a.mitigation))))
      : h('p', { class: 'muted' }, 'None specific to this tool.'),
    h('h2', {}, 'Verdict'),
    r.configured ? h('p', {}, h('strong', {}, shown(t.name)), ' ', configuredVerdict(r, t.name) ? verdictBadge(configuredVerdict(r, t.name).verdict) : h('span', { class: 'muted' }, 'not loaded'),
      h('span', { class: 'muted' }, ' under the configured policy ', h('code', {}, r.configured.file), configuredVerdict(r, t.name) ? [' (', h('code', {}, shown(configuredVerdict(r, t.name).rule)), ')'] : '')) : null,
    h('p', {}, r.configured ? h('span', { class: 'muted' }, 'Recommended: ') : h('strong', {}, shown(t.name)), r.configured ? '' : ' ', verdictBadge(t.verdict)),
    h('p', { class: 'muted' }, r.configured ? 'the recommended policy.json entry' : 'policy.json'), h('pre', {}, h('code', {}, shownLines(JSON.stringify(t.policy, null, 2)))),
    h('h2', {}, 'FAQ'), t.faq.map((f) => h('details', {}, h('summary', {}, shown(f.q)), h('p', {}, shown(f.a)))));
}

export async function detail(view, slug) {
  replace(view, loading());
  try {
    const r = await api(`/api/records/${enc(slug)}`);
    replace(view, serverRecord(r, (tool) => `#/records/${enc(slug)}/tools/${enc(tool)}`));
  } catch (err) { replace(view, failure(err)); }
}

export async function tool(view, slug, name) {
  replace(view, loading());
  try {
    const r = await api(`/api/records/${enc(slug)}`);
    const t = r.tools.find((x) => x.name === name);
    if (!t) throw new Error(`${title(r)} has no tool named ${shown(name)}`);
    replace(view, toolRecord(r, t, `#/records/${enc(slug)}`));
  } catch (err) { replace(view, failure(err)); }
}

/** Type a name, get the breakdown: servers and tools of the local catalog as you type. */
export async function search(view, initial) {
  const results = h('div', { 'aria-live': 'polite' });
  const input = h('input', { id: 'catalog-search', type: 'search', value: initial, placeholder: 'server or tool name', autocomplete: 'off', spellcheck: 'false' });
  replace(view,
    h('h1', {}, 'Records'),
    h('p', { class: 'muted' }, 'The local catalog of server records (every configured server is added when its page is opened, and toolgate record adds more).'),
    h('div', { class: 'field' }, h('label', { for: 'catalog-search' }, 'Search the catalog'), input),
    results);
  let timer;
  let seq = 0;
  const run = async () => {
    const mine = ++seq;
    const text = input.value.trim();
    history.replaceState(null, '', text ? `#/records?q=${enc(text)}` : '#/records');
    try {
      const found = await api(`/api/records?search=${enc(text)}`);
      if (mine !== seq) return;
      replace(results, found.length === 0 ? h('p', { class: 'muted' }, text ? `No record matches “${text}”.` : 'The catalog is empty.') : h('div', { class: 'grid' }, found.map((r) => h('section', { class: 'card' },
        h('div', { class: 'card-head' }, gradeBox(r.grade), h('div', {}, h('h2', {}, h('a', { href: `#/records/${enc(r.slug)}` }, shown(r.name))), h('div', { class: 'muted' }, shown(`${r.package ?? ''} ${r.version ?? ''} · ${r.tools} tools`)))),
        countBadges(r.counts),
        r.matches.length ? h('ul', { 'aria-label': `tools of ${shown(r.name)} matching` }, r.matches.map((t) => h('li', {},
          h('a', { href: `#/records/${enc(r.slug)}/tools/${enc(t.name)}` }, shown(t.name)), ' ', catBadge(t.category), ' ', t.risk, ' · ', verdictBadge(t.verdict)))) : null))));
    } catch (err) { if (mine === seq) replace(results, failure(err)); }
  };
  input.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(run, 150); });
  await run();
  return () => clearTimeout(timer);
}
