import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { scoreServer, type Label, type Scored } from '../helpers/safety.js';
import type { ToolDefinition } from '../../src/risk/index.js';

/**
 * Prints, for one blind set, each unsafe miss and each over-hold (key, label, got, the rule's shape, a
 * description excerpt), scored by the same code path as test/risk-blind.test.ts (test/helpers/safety.ts), so
 * the counts agree with it. Tuning data only: never run it on the set that is the measure.
 *
 *   node --import tsx test/blind/misses.ts test/blind6 [--all]   (--all: every disagreement too)
 */
const dir = resolve(process.argv[2] ?? '');
const all = process.argv.includes('--all');
const labels = JSON.parse(readFileSync(join(dir, 'labels.json'), 'utf8')) as Record<string, Label>;
const rows: { key: string; s: Scored }[] = [];
for (const file of readdirSync(join(dir, 'servers')).filter((f) => f.endsWith('.json')).sort()) {
  const slug = file.replace(/\.json$/, '');
  const data = JSON.parse(readFileSync(join(dir, 'servers', file), 'utf8')) as { server: { serverInfo?: { name?: string }; instructions?: string | null }; tools: ToolDefinition[] };
  const scored = scoreServer(data.tools, { name: data.server.serverInfo?.name, instructions: data.server.instructions ?? undefined }, (t) => (Object.hasOwn(labels, `${slug}/${t.name}`) ? labels[`${slug}/${t.name}`] : undefined));
  for (const s of scored) rows.push({ key: `${slug}/${s.tool.name}`, s });
}
const shape = (s: Scored) => (s.got.actions ? `multi-action ${s.got.actions.param} safe=[${s.got.actions.safe.join(',')}]` : s.got.category);
const excerpt = (t: ToolDefinition) => (t.description ?? '').replace(/\s+/g, ' ').slice(0, 160);
const print = (title: string, list: { key: string; s: Scored }[]) => {
  console.log(`\n## ${title} (${list.length})`);
  for (const { key, s } of list) console.log(`${key}\t${s.label.category}${s.label.actions ? '*' : ''} -> ${s.got.category} [${shape(s)}]${s.unsafeBySafeAction ? ' (safe action)' : ''}\n    params: ${Object.keys((s.tool.inputSchema as { properties?: object })?.properties ?? {}).join(', ')}\n    ${excerpt(s.tool)}`);
};
print('unsafe misses', rows.filter((r) => r.s.unsafe));
print('over-holds', rows.filter((r) => r.s.overHeld));
if (all) print('other disagreements', rows.filter((r) => !r.s.unsafe && !r.s.overHeld && r.s.got.category !== r.s.label.category));
