import { escapeControls } from '../display/index.js';
import type { Finding } from '../poison/types.js';
import { CATEGORIES } from './types.js';
import type { ServerRecord, ToolRecord } from './record.js';
import { serverFlowSentence, toolFlowLines } from '../flows/record.js';

/** File-safe name for a tool page. */
export function toolSlug(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, '_');
}

const serverTitle = (r: ServerRecord) => r.identity.serverInfo.title || r.identity.serverInfo.name;
const json = (v: unknown) => JSON.stringify(v, null, 2);

/** Text of several lines in a markdown page (a JSON block, a description): its line breaks are kept. */
class Block {
  constructor(readonly text: string) {}
}
/**
 * A description or an answer that repeats it, as a block: one line stays as it is; several lines are
 * quoted (`> ` before each), so a server's text cannot start a line that reads as the page's own
 * heading, grade or verdict.
 */
const quoted = (text: string) => new Block(text.includes('\n') ? text.split('\n').map((l) => `> ${l}`.trimEnd()).join('\n') : text);
/**
 * A markdown page from its lines: every hidden character shown as an escape, and in each line a line
 * break from a server's text (its name, title or version, a tool's name, a quote) written as `\n`, so
 * it cannot forge a line of its own ("Risk grade **A**", "- verification: **verified**"). Blocks keep theirs.
 */
const markdown = (lines: (string | Block)[]) => lines.map((l) => (l instanceof Block ? escapeControls(l.text, true) : escapeControls(l))).join('\n');

function originText(r: ServerRecord): string {
  const o = r.identity.origin;
  if (o.kind === 'url') return o.url!;
  return `${o.commandLine}${o.package ? ` (package ${o.package}${o.version ? `@${o.version}` : ', version unknown'})` : ''}`;
}

function authText(r: ServerRecord): string {
  const a = r.auth;
  if (a.kind === 'local-process') return `local process${a.secretEnv?.length ? `; receives secret-looking environment variables: ${a.secretEnv.join(', ')}` : ''}`;
  return `${a.kind}${a.tls === undefined ? '' : a.tls ? ', TLS' : ', no TLS'}${a.detail ? ` — ${a.detail}` : ''}`;
}

function verdictLine(t: ToolRecord): string {
  return [baseVerdictLine(t), ...t.refinements.map((r) => `${r.says} (Attack pattern: ${t.attacks.find((a) => a.id === r.attack)?.title ?? r.attack}.)`)].join(' ');
}

function baseVerdictLine(t: ToolRecord): string {
  switch (t.verdict) {
    case 'Allowed': return `${t.name} is allowed: it only reads. Everything else on the server is denied unless you say otherwise.`;
    case 'Rate-limited': return `${t.name} stays usable, but rate-capped — a runaway agent can't fire it dozens of times a minute. Everything else on the server is denied unless you say otherwise.`;
    case 'Needs approval': {
      const a = t.classification.actions;
      if (a) return `${t.name} waits for a human to approve each call, who sees its arguments, unless its ${a.param} is exactly one of ${a.safe.join(', ')}: ${Object.keys(a.values).filter((v) => !a.safe.includes(v)).join(', ')}, any value added later, another spelling and a call without ${a.param} are all held; the safe actions stay usable${t.policy.tools?.[t.name]?.limits?.length ? ', rate-capped' : ''}. Everything else on the server is denied unless you say otherwise.`;
      return `${t.name} waits for a human to approve each call, who sees its arguments. Everything else on the server is denied unless you say otherwise.`;
    }
    case 'Hidden': return hideLevelOf(t).length
      ? `${t.name} is hidden from the agent and denied if called: its definition carries text aimed at the model rather than the user (poisoned: hide).`
      : `${t.name} is hidden from the agent and denied if called.`;
  }
}

const hideLevelOf = (t: ToolRecord): Finding[] => (t.poisoning ?? []).filter((f) => f.level === 'hide');
/** A description as a person may see it: hidden characters (tag characters, bidi controls) shown as escapes. */
const shownDescription = (t: ToolRecord) => escapeControls(t.description.trim(), true) || `${t.name} has no description.`;
/** Markdown text: escaped as above, and with characters that would make markup or links inert. */
const mdText = (s: string) => escapeControls(s).replace(/[\\`*_[\]<>|]/g, '\\$&');

function poisoningMarkdown(t: ToolRecord): string[] {
  const found = t.poisoning ?? [];
  if (!found.length) return [];
  return ['## Poisoning', '', `${found.length} finding${found.length === 1 ? '' : 's'} of text aimed at the model rather than the user:`, '',
    ...found.map((f) => `- **${f.level}** · ${f.kind} in \`${escapeControls(f.field).replace(/`/g, "'")}\`: ${mdText(f.evidence)}`), ''];
}

export function toolMarkdown(r: ServerRecord, t: ToolRecord): string {
  const c = t.classification;
  const lines: (string | Block)[] = [
    `# ${t.name} · ${serverTitle(r)}: Risk & Policy`,
    '',
    '## What it does',
    '',
    quoted(shownDescription(t)),
    '',
    ...poisoningMarkdown(t),
    '## Why it needs a policy',
    '',
    `**${c.category}**, risk **${c.risk}**, confidence ${c.confidence}${c.signals.length ? ` · signals: ${c.signals.join(', ')}` : ''}`,
    '',
    c.rationale,
    '',
    ...c.evidence.map((e) => `- from the ${e.from}: “${e.text}”`),
    '',
    ...toolFlowLines(c),
    '',
    '## Attacks that exploit this kind of access',
    '',
    ...(t.attacks.length ? t.attacks.flatMap((a) => [`- **${a.title}** — ${a.description} *Blunted by:* ${a.mitigation}`]) : ['- None specific to this tool beyond those of the server.']),
    '',
    '## Verdict',
    '',
    `**${t.verdict}** — ${verdictLine(t)}`,
    '',
    'policy.json',
    '',
    '```json',
    new Block(json(t.policy)),
    '```',
    '',
    '## FAQ',
    '',
    ...t.faq.flatMap((f) => [`**${f.q}**`, '', quoted(f.a), '']),
  ];
  // Hidden characters anywhere in server-written text (the FAQ repeats the description) shown as escapes.
  return markdown(lines);
}

/** `toolHref: null` for a page standing alone (stdout, `-o x.md`): tool names are not linked to pages that do not exist. */
export function serverMarkdown(r: ServerRecord, toolHref: ((t: ToolRecord) => string) | null = (t) => `tools/${toolSlug(t.name)}.md`): string {
  const id = r.identity;
  const caps = r.capabilities;
  return markdown([
    `# ${serverTitle(r)}: Risk & Policy`,
    '',
    `Risk grade **${r.grade.letter}** (${r.grade.reasons.join('; ') || 'no risky tools'})`,
    '',
    '## Identity',
    '',
    `- server: ${id.serverInfo.name}${id.serverInfo.version ? ` ${id.serverInfo.version}` : ''}${id.serverInfo.title ? ` (“${id.serverInfo.title}”)` : ''}`,
    `- protocol version: ${id.protocolVersion ?? 'unknown'}`,
    `- origin: ${originText(r)}`,
    `- fingerprint: \`${id.fingerprint}\``,
    `- verification: **${id.verification}**${id.changedTools.length ? ` (changed: ${id.changedTools.join(', ')})` : ''}`,
    '',
    '## Auth posture',
    '',
    authText(r),
    '',
    '## Capabilities',
    '',
    `- tools: ${caps.tools.count}${caps.tools.listChanged ? ' (listChanged)' : ''}`,
    `- resources: ${caps.resources.count}, templates: ${caps.resources.templates}${caps.resources.subscribe ? ' (subscribe)' : ''}${caps.resources.listChanged ? ' (listChanged)' : ''}`,
    `- prompts: ${caps.prompts.count}${caps.prompts.listChanged ? ' (listChanged)' : ''}`,
    `- logging: ${caps.logging ? 'yes' : 'no'}, completions: ${caps.completions ? 'yes' : 'no'}`,
    '',
    '## Tools by category',
    '',
    '| category | tools |',
    '|---|---|',
    ...CATEGORIES.map((c) => `| ${c} | ${r.counts[c]} |`),
    '',
    '## Riskiest tools',
    '',
    ...r.riskiest.map((t) => `- ${t.name}: ${t.category}, ${t.risk} (confidence ${t.confidence})`),
    '',
    ...(r.flows ? ['## Data flows', '', serverFlowSentence(r.flows), ''] : []),
    '## Every tool',
    '',
    '| tool | category | risk | verdict |',
    '|---|---|---|---|',
    ...r.tools.map((t) => `| ${toolHref ? `[${t.name}](${toolHref(t)})` : t.name} | ${t.classification.category} | ${t.classification.risk} | ${t.verdict}${t.poisoning?.length ? ` (poisoning: ${hideLevelOf(t).length} hide, ${t.poisoning.length - hideLevelOf(t).length} warn)` : ''} |`),
    '',
    '## Recommended policy',
    '',
    '```json',
    new Block(json(r.recommendedPolicy)),
    '```',
    '',
  ]);
}

const esc = (s: string) => s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

const STYLE = `
  :root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #fff; --card: #f6f8fa; --line: #d0d7de;
    --Read: #1a7f37; --Write: #9a6700; --Execute: #bc4c00; --Destructive: #cf222e; --Financial: #8250df; }
  @media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --bg: #0d1117; --card: #161b22; --line: #30363d; } }
  * { box-sizing: border-box; }
  body { margin: 0 auto; max-width: 60rem; padding: 2rem 1.25rem 4rem; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
  h1 { font-size: 1.8rem; margin: 0 0 .25rem; } h2 { font-size: 1.15rem; margin: 2rem 0 .6rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
  a { color: inherit; } .muted { color: var(--muted); }
  .badge { display: inline-block; padding: .1rem .55rem; border-radius: 999px; font-weight: 600; font-size: .85rem; border: 1px solid currentColor; }
  .grade { font-size: 2.4rem; font-weight: 800; width: 4rem; height: 4rem; display: grid; place-items: center; border-radius: .75rem; background: var(--card); border: 1px solid var(--line); }
  .head { display: flex; gap: 1rem; align-items: center; }
  .card { background: var(--card); border: 1px solid var(--line); border-radius: .6rem; padding: 1rem 1.2rem; }
  table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .45rem .6rem; border-bottom: 1px solid var(--line); }
  td code, td a { overflow-wrap: anywhere; }
  pre { max-width: 100%; }
  @media (max-width: 34rem) {
    body { padding: 1rem .75rem 3rem; } h1 { font-size: 1.35rem; overflow-wrap: anywhere; } .grade { flex: none; width: 3rem; height: 3rem; font-size: 1.8rem; }
    th, td { padding: .35rem .3rem; font-size: .9rem; } .badge { font-size: .75rem; padding: .05rem .4rem; }
  }
  pre { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .9rem; overflow-x: auto; font-size: .85rem; }
  code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
  details { border-bottom: 1px solid var(--line); padding: .6rem 0; } summary { cursor: pointer; font-weight: 600; }
  ${CATEGORIES.map((c) => `.cat-${c} { color: var(--${c}); }`).join(' ')}
  ul.evidence { margin: .4rem 0 0; padding-left: 1.2rem; }
`;

function page(title: string, body: string): string {
  // Server-written text (descriptions, FAQ answers, names) may carry tag characters or bidi
  // controls: on the page every one is shown as an escape, wherever it came from.
  return escapeControls(`<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>\n`, true);
}

const badge = (category: string, text = category) => `<span class="badge cat-${esc(category)}">${esc(text)}</span>`;

export function toolHtml(r: ServerRecord, t: ToolRecord, serverHref = '../index.html'): string {
  const c = t.classification;
  const body = `
<p class="muted"><a href="${esc(serverHref)}">← ${esc(serverTitle(r))}</a></p>
<h1>${esc(t.name)} · ${esc(serverTitle(r))}: Risk &amp; Policy</h1>
<p>${badge(c.category)} <span class="badge">${esc(c.risk)} risk</span> <span class="muted">confidence ${c.confidence}</span></p>
<section><h2>What it does</h2><p>${esc(shownDescription(t))}</p></section>
${t.poisoning?.length ? `<section><h2>Poisoning</h2><div class="card"><p>${t.poisoning.length} finding${t.poisoning.length === 1 ? '' : 's'} of text aimed at the model rather than the user:</p><ul class="evidence">${t.poisoning.map((f) => `<li><span class="badge">${esc(f.level)}</span> ${esc(f.kind)} in <code>${esc(escapeControls(f.field))}</code>: ${esc(escapeControls(f.evidence))}</li>`).join('')}</ul></div></section>` : ''}
<section><h2>Why it needs a policy</h2><div class="card"><p>${esc(c.rationale)}</p>
${c.signals.length ? `<p class="muted">Signals: ${c.signals.map(esc).join(', ')}</p>` : ''}
<ul class="evidence">${c.evidence.map((e) => `<li><span class="muted">from the ${esc(e.from)}:</span> “${esc(e.text)}”</li>`).join('')}</ul>
<p>${c.flows?.roles.length ? `Flow roles: ${c.flows.evidence.map((e) => `<strong>${esc(e.role)}</strong> <span class="muted">(from the ${esc(e.from)}: “${esc(e.text)}”)</span>`).join(', ')}` : 'Flow roles: none.'}</p></div></section>
<section><h2>Attacks that exploit this kind of access</h2>
${t.attacks.length ? t.attacks.map((a) => `<details><summary>${esc(a.title)}</summary><p>${esc(a.description)}</p><p><strong>Blunted by:</strong> ${esc(a.mitigation)}</p></details>`).join('') : '<p class="muted">None specific to this tool.</p>'}</section>
<section><h2>Verdict</h2><p><strong>${esc(t.name)}</strong> ${badge(t.verdict === 'Allowed' ? 'Read' : t.verdict === 'Rate-limited' ? 'Write' : 'Destructive', t.verdict)}</p>
<p>${esc(verdictLine(t))}</p><p class="muted">policy.json</p><pre><code>${esc(json(t.policy))}</code></pre></section>
<section><h2>FAQ</h2>${t.faq.map((f) => `<details><summary>${esc(f.q)}</summary><p>${esc(f.a)}</p></details>`).join('')}</section>`;
  return page(`${t.name} · ${serverTitle(r)}: Risk & Policy`, body);
}

export function serverHtml(r: ServerRecord, toolHref: ((t: ToolRecord) => string) | null = (t) => `tools/${toolSlug(t.name)}.html`): string {
  const id = r.identity;
  const caps = r.capabilities;
  const body = `
<div class="head"><div class="grade" title="risk grade">${r.grade.letter}</div><div>
<h1>${esc(serverTitle(r))}: Risk &amp; Policy</h1>
<div class="muted">${esc(r.grade.reasons.join('; ') || 'no risky tools')}</div></div></div>
<section><h2>Identity</h2><table>
<tr><th>server</th><td>${esc(id.serverInfo.name)} ${esc(id.serverInfo.version ?? '')}</td></tr>
<tr><th>protocol</th><td>${esc(id.protocolVersion ?? 'unknown')}</td></tr>
<tr><th>origin</th><td><code>${esc(originText(r))}</code></td></tr>
<tr><th>fingerprint</th><td><code>${esc(id.fingerprint)}</code></td></tr>
<tr><th>verification</th><td><strong>${esc(id.verification)}</strong>${id.changedTools.length ? ` — changed: ${esc(id.changedTools.join(', '))}` : ''}</td></tr>
<tr><th>auth posture</th><td>${esc(authText(r))}</td></tr>
<tr><th>capabilities</th><td>tools ${caps.tools.count}, resources ${caps.resources.count} (+${caps.resources.templates} templates), prompts ${caps.prompts.count}, logging ${caps.logging ? 'yes' : 'no'}, completions ${caps.completions ? 'yes' : 'no'}</td></tr>
</table></section>
<section><h2>Tools by category</h2><p>${CATEGORIES.map((c) => `${badge(c, `${c} ${r.counts[c]}`)}`).join(' ')}</p></section>
${r.flows ? `<section><h2>Data flows</h2><p>${esc(serverFlowSentence(r.flows))}</p></section>
` : ''}<section><h2>Every tool</h2><table><thead><tr><th>tool</th><th>category</th><th>risk</th><th>verdict</th></tr></thead><tbody>
${r.tools.map((t) => `<tr><td>${toolHref ? `<a href="${esc(toolHref(t))}">` : ''}${esc(t.name).replace(/[_-]/g, '$&<wbr>')}${toolHref ? '</a>' : ''}</td><td>${badge(t.classification.category)}</td><td>${esc(t.classification.risk)}</td><td>${esc(t.verdict)}${t.poisoning?.length ? ` <span class="muted">(poisoning: ${hideLevelOf(t).length} hide, ${t.poisoning.length - hideLevelOf(t).length} warn)</span>` : ''}</td></tr>`).join('\n')}
</tbody></table></section>
<section><h2>Recommended policy</h2><pre><code>${esc(json(r.recommendedPolicy))}</code></pre></section>`;
  return page(`${serverTitle(r)}: Risk & Policy`, body);
}
