import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CATEGORIES, classifyTools, type Category, type ToolDefinition } from '../src/risk/index.js';
import { ROOT } from './helpers/toolgate.js';

/**
 * The blind sets (test/blind/README.md, test/blind2/README.md, test/blind3/README.md): real tools from servers outside
 * the corpus, labelled against SPEC section 5 before any classifier change that followed. They
 * measure the classifier the way an outsider would and stay out of the tuning loop: this test
 * reports only aggregates — never an individual disagreement — and holds a floor a little below
 * the accuracy reached, so a regression shows.
 */
interface BlindSet {
  dir: string;
  labelledAt: string;
  minTools: number;
  floor: { overall: number; perCategory: number };
}

const SETS: BlindSet[] = [
  // Labels adjudicated with a second blind labeller at 92b862b (test/blind/ADJUDICATION.md).
  { dir: 'test/blind', labelledAt: '4e3f19e', minTools: 540, floor: { overall: 0.9, perCategory: 0.75 } },
  { dir: 'test/blind2', labelledAt: '1d8e0e9', minTools: 420, floor: { overall: 0.85, perCategory: 0.3 } },
  { dir: 'test/blind3', labelledAt: '8e70291', minTools: 450, floor: { overall: 0.8, perCategory: 0.1 } },
];

function score(set: BlindSet): { n: number; overall: number; line: string; perCategory: Map<Category, number> } {
  const dir = join(ROOT, set.dir);
  const labels = JSON.parse(readFileSync(join(dir, 'labels.json'), 'utf8')) as Record<string, { category: Category }>;
  const tally = new Map<Category, { n: number; right: number }>(CATEGORIES.map((c) => [c, { n: 0, right: 0 }]));
  for (const file of readdirSync(join(dir, 'servers')).sort()) {
    const slug = file.replace(/\.json$/, '');
    const data = JSON.parse(readFileSync(join(dir, 'servers', file), 'utf8')) as { server: { serverInfo?: { name?: string }; instructions?: string | null }; tools: ToolDefinition[] };
    const got = classifyTools(data.tools, { name: data.server.serverInfo?.name, instructions: data.server.instructions ?? undefined });
    data.tools.forEach((tool, i) => {
      const label = Object.hasOwn(labels, `${slug}/${tool.name}`) ? labels[`${slug}/${tool.name}`].category : undefined;
      if (!label) return;
      const t = tally.get(label)!;
      t.n++;
      if (got[i].category === label) t.right++;
    });
  }
  const n = [...tally.values()].reduce((s, t) => s + t.n, 0);
  const overall = [...tally.values()].reduce((s, t) => s + t.right, 0) / n;
  const perCategory = new Map(CATEGORIES.map((c) => [c, tally.get(c)!.right / tally.get(c)!.n] as const));
  const line = `${set.dir} (labelled at ${set.labelledAt}): ${(100 * overall).toFixed(1)}% of ${n} — ${CATEGORIES.map((c) => `${c} ${(100 * perCategory.get(c)!).toFixed(1)}% (${tally.get(c)!.n})`).join(', ')}`;
  return { n, overall, line, perCategory };
}

for (const set of SETS) {
  describe(`blind set ${set.dir} (labelled at ${set.labelledAt})`, () => {
    it('reports accuracy overall and per category, above its floor', (t) => {
      const { n, overall, line, perCategory } = score(set);
      t.diagnostic(line);
      assert.ok(n >= set.minTools, `${n} labelled tools`);
      assert.ok(overall >= set.floor.overall, line);
      for (const c of CATEGORIES) assert.ok(perCategory.get(c)! >= set.floor.perCategory, `${c}: ${line}`);
    });
  });
}
