import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CATEGORIES, classifyTools, type Category, type ToolDefinition } from '../src/risk/index.js';
import { ROOT } from './helpers/toolgate.js';

/**
 * The blind set (test/blind/README.md): 541 real tools from 35 servers outside the corpus,
 * labelled against SPEC section 5 at commit 4e3f19e, before any classifier change that followed.
 * It measures the classifier the way an outsider would and stays out of the tuning loop: this
 * test reports only aggregates — never an individual disagreement — and holds a floor a little
 * below the accuracy reached, so a regression shows.
 */
const LABELLED_AT = '4e3f19e';
const DIR = join(ROOT, 'test/blind');
const FLOOR = { overall: 0.9, perCategory: 0.75 };

describe(`blind set (labelled at ${LABELLED_AT})`, () => {
  const labels = JSON.parse(readFileSync(join(DIR, 'labels.json'), 'utf8')) as Record<string, { category: Category }>;
  const tally = new Map<Category, { n: number; right: number }>(CATEGORIES.map((c) => [c, { n: 0, right: 0 }]));
  for (const file of readdirSync(join(DIR, 'servers')).sort()) {
    const slug = file.replace(/\.json$/, '');
    const data = JSON.parse(readFileSync(join(DIR, 'servers', file), 'utf8')) as { server: { serverInfo?: { name?: string }; instructions?: string | null }; tools: ToolDefinition[] };
    const got = classifyTools(data.tools, { name: data.server.serverInfo?.name, instructions: data.server.instructions ?? undefined });
    data.tools.forEach((tool, i) => {
      const label = labels[`${slug}/${tool.name}`]?.category;
      if (!label) return;
      const t = tally.get(label)!;
      t.n++;
      if (got[i].category === label) t.right++;
    });
  }
  const n = [...tally.values()].reduce((s, t) => s + t.n, 0);
  const overall = [...tally.values()].reduce((s, t) => s + t.right, 0) / n;
  const line = `blind (labelled at ${LABELLED_AT}): ${(100 * overall).toFixed(1)}% of ${n} — ${CATEGORIES.map((c) => `${c} ${(100 * tally.get(c)!.right / tally.get(c)!.n).toFixed(1)}% (${tally.get(c)!.n})`).join(', ')}`;

  it('reports accuracy overall and per category, above its floor', (t) => {
    t.diagnostic(line);
    assert.ok(n >= 500, `${n} labelled tools`);
    assert.ok(overall >= FLOOR.overall, line);
    for (const c of CATEGORIES) assert.ok(tally.get(c)!.right / tally.get(c)!.n >= FLOOR.perCategory, `${c}: ${line}`);
  });
});
