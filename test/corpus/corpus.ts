import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { classifyTools, CATEGORIES, type Category, type Classification, type ToolDefinition } from '../../src/risk/index.js';

/** `dev`: the servers added later as a tuning set, labelled before the classifier saw them; `batch` names
 * their batch (`dev`…`dev9`), or is `corpus` for the first corpus. */
export interface Example { server: string; tool: ToolDefinition; label: Category; holdout: boolean; dev: boolean; batch: string; got: Classification }

export const DEV_BATCHES = ['dev', 'dev2', 'dev3', 'dev4', 'dev5', 'dev6', 'dev7', 'dev8', 'dev9', 'dev10'] as const;

const DIR = import.meta.dirname;

/** Every labelled tool of the corpus, classified with its server's context. */
export function classifyCorpus(): Example[] {
  const file = JSON.parse(readFileSync(join(DIR, 'labels.json'), 'utf8')) as { labels: Record<string, Record<string, Category>>; holdout: string[] } & Partial<Record<(typeof DEV_BATCHES)[number], string[]>>;
  const { labels, holdout } = file;
  const batchOf = new Map<string, string>(DEV_BATCHES.flatMap((b) => (file[b] ?? []).map((server) => [server, b] as [string, string])));
  const out: Example[] = [];
  for (const file of readdirSync(join(DIR, 'servers')).sort()) {
    const server = file.replace(/\.json$/, '');
    const data = JSON.parse(readFileSync(join(DIR, 'servers', file), 'utf8')) as { server: { name?: string; instructions?: string | null }; tools: (ToolDefinition & { _server?: { name?: string; instructions?: string } })[] };
    const results = data.tools.some((t) => t._server)
      ? data.tools.map((t) => classifyTools([t], t._server ?? {})[0])
      : classifyTools(data.tools, { name: data.server.name, instructions: data.server.instructions ?? undefined });
    data.tools.forEach((tool, i) => {
      const label = labels[server]?.[tool.name];
      const batch = batchOf.get(server) ?? 'corpus';
      if (label) out.push({ server, tool, label, holdout: holdout.includes(server), dev: batch !== 'corpus', batch, got: results[i] });
    });
  }
  return out;
}

export interface Accuracy { overall: number; n: number; perCategory: Record<Category, { accuracy: number; n: number }> }

export function accuracy(examples: Example[]): Accuracy {
  const perCategory = {} as Accuracy['perCategory'];
  for (const c of CATEGORIES) {
    const of = examples.filter((e) => e.label === c);
    perCategory[c] = { n: of.length, accuracy: of.length ? of.filter((e) => e.got.category === c).length / of.length : 1 };
  }
  return { n: examples.length, overall: examples.filter((e) => e.got.category === e.label).length / examples.length, perCategory };
}

export function formatAccuracy(name: string, a: Accuracy): string {
  const cats = CATEGORIES.map((c) => `${c} ${(100 * a.perCategory[c].accuracy).toFixed(1)}% (${a.perCategory[c].n})`).join(', ');
  return `${name}: ${(100 * a.overall).toFixed(1)}% of ${a.n} — ${cats}`;
}
