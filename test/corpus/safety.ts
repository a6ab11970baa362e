// The tuning loop's safety view (issue 24): unsafe misses and over-holds of the recommended policy on
// the corpus only (test/corpus, every batch), with the real engine (test/helpers/safety.ts). Never
// reads a blind set. A multi-action tool's per-action labels (labels.json `actions`) are used as the blind sets use theirs. `node --import tsx test/corpus/safety.ts [list]` also lists the tools.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CATEGORIES, type Category, type ToolDefinition } from '../../src/risk/index.js';
import { formatShare, scoreServer, wilson, type Label, type Scored } from '../helpers/safety.js';

const DIR = import.meta.dirname;
const { labels, actions } = JSON.parse(readFileSync(join(DIR, 'labels.json'), 'utf8')) as { labels: Record<string, Record<string, Category>>; actions?: Record<string, Record<string, NonNullable<Label['actions']>>> };
const all: (Scored & { server: string })[] = [];
for (const file of readdirSync(join(DIR, 'servers')).sort()) {
  const server = file.replace(/\.json$/, '');
  const data = JSON.parse(readFileSync(join(DIR, 'servers', file), 'utf8')) as { server: { name?: string; instructions?: string | null }; tools: (ToolDefinition & { _server?: { name?: string; instructions?: string } })[] };
  const labelOf = (t: ToolDefinition): Label | undefined => { const c = labels[server]?.[t.name]; const a = actions?.[server]?.[t.name]; return c ? { category: c, ...(a ? { actions: a } : {}) } : undefined; };
  const scored = data.tools.some((t) => t._server)
    ? data.tools.flatMap((t) => scoreServer([t], t._server ?? {}, labelOf))
    : scoreServer(data.tools, { name: data.server.name, instructions: data.server.instructions ?? undefined }, labelOf);
  all.push(...scored.map((s) => ({ ...s, server })));
}
const risky = all.filter((s) => ['Execute', 'Destructive', 'Financial'].includes(s.label.category));
const benign = all.filter((s) => s.label.category === 'Read' || s.label.category === 'Write');
const right = all.filter((s) => s.got.category === s.label.category).length;
const cats = CATEGORIES.map((c) => { const of = all.filter((s) => s.label.category === c); return `${c} ${(100 * of.filter((s) => s.got.category === c).length / of.length).toFixed(1)}% (${of.length})`; }).join(', ');
console.log(`corpus: agreement ${(100 * right / all.length).toFixed(2)}% of ${all.length} — ${cats}`);
console.log(`unsafe misses ${formatShare(wilson(risky.filter((s) => s.unsafe).length, risky.length))} (${risky.filter((s) => s.unsafeBySafeAction).length} multi-action passed only for safe values)`);
console.log(`over-holds ${formatShare(wilson(benign.filter((s) => s.overHeld).length, benign.length))}`);
console.log(`leaned strict ${all.filter((s) => (s.got.signals as string[]).includes('leaned_strict')).length}`);
if (process.argv[2] === 'list') {
  for (const s of all.filter((x) => x.unsafe)) console.log(`UNSAFE ${s.server}/${s.tool.name}: want ${s.label.category}, got ${s.got.category}${s.got.actions ? ` (actions safe: ${s.got.actions.safe.join(',')})` : ''} — ${(s.tool.description ?? '').replace(/\s+/g, ' ').slice(0, 110)}`);
  for (const s of all.filter((x) => x.overHeld)) console.log(`OVERHELD ${s.server}/${s.tool.name}: want ${s.label.category}, got ${s.got.category} — ${(s.tool.description ?? '').replace(/\s+/g, ' ').slice(0, 110)}`);
}
