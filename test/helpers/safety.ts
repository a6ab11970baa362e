import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompiledPolicy, Engine } from '../../src/engine/index.js';
import { PolicySchema } from '../../src/policy/index.js';
import { CATEGORIES, classifyTools, recommendPolicy, type Category, type Classification, type ToolDefinition } from '../../src/risk/index.js';
import { MemoryCounterStore } from '../../src/state/memory.js';

/**
 * What the recommended policy lets through (issue 24, SPEC section 5 "Safe by default"), judged
 * with the real decision engine rather than by comparing categories:
 *
 * - an *unsafe miss* is a tool labelled Destructive or Financial whose recommended rule does not
 *   hold every call (for a multi-action tool, every call whose action is a labelled dangerous
 *   value, and the call with the action missing), or a tool labelled Execute that a call passes
 *   without any limit; counted over every Execute, Destructive and Financial tool;
 * - an *over-hold* is a tool labelled Read or Write whose rule holds every call; counted over
 *   every Read and Write tool.
 */

/** A label as the blind sets write it; a multi-action tool may say what each action value does. */
export interface Label {
  category: Category;
  actions?: { param: string; values: Record<string, Category> };
}

export interface Scored {
  tool: ToolDefinition;
  label: Label;
  got: Classification;
  unsafe: boolean;
  /** Unsafe only because a multi-action rule lets the values it knows to be safe through, and the label says nothing of actions. */
  unsafeBySafeAction: boolean;
  overHeld: boolean;
}

const DANGEROUS = new Set<Category>(['Destructive', 'Financial']);

/** The calls a tool's rule is tried with: no arguments, and one per enum value of each top-level argument. */
function probeCalls(tool: ToolDefinition): Record<string, unknown>[] {
  const props = (tool.inputSchema as { properties?: Record<string, { enum?: unknown[] }> } | undefined)?.properties ?? {};
  const calls: Record<string, unknown>[] = [{}];
  for (const [name, schema] of Object.entries(props)) {
    if (!schema || !Array.isArray(schema.enum)) continue;
    for (const v of schema.enum) if (typeof v === 'string') calls.push({ [name]: v });
  }
  return calls;
}

/** Scores one server's tools against their labels under the policy toolgate recommends for it. */
export function scoreServer(tools: ToolDefinition[], server: { name?: string; instructions?: string }, labelOf: (tool: ToolDefinition) => Label | undefined): Scored[] {
  const got = classifyTools(tools, server);
  const policy = PolicySchema.parse(recommendPolicy(got, tools, server.name));
  const engine = new Engine({ policy: new CompiledPolicy(policy, 'safety'), counters: new MemoryCounterStore() });
  const decide = (tool: string, args: Record<string, unknown>) => {
    const e = engine.evaluate({ tool, args, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'srv' }, now: 0 });
    return { held: e.verdict !== 'allow', limited: (e.limits ?? e.entry?.checks.limits ?? []).length > 0 };
  };
  const out: Scored[] = [];
  tools.forEach((tool, i) => {
    const label = labelOf(tool);
    if (!label) return;
    const probes = probeCalls(tool);
    let unsafe = false;
    let unsafeBySafeAction = false;
    if (DANGEROUS.has(label.category)) {
      const calls = label.actions
        ? [{}, ...Object.entries(label.actions.values).filter(([, c]) => DANGEROUS.has(c)).map(([v]) => ({ [label.actions!.param]: v }))]
        : probes;
      const passed = calls.filter((args) => !decide(tool.name, args).held);
      unsafe = passed.length > 0;
      const a = got[i].actions;
      unsafeBySafeAction = unsafe && !label.actions && !!a && passed.every((args) => Object.keys(args).length === 1 && a.safe.includes(String(args[a.param])));
    } else if (label.category === 'Execute') {
      unsafe = probes.some((args) => { const d = decide(tool.name, args); return !d.held && !d.limited; });
    }
    const overHeld = (label.category === 'Read' || label.category === 'Write') && probes.every((args) => decide(tool.name, args).held);
    out.push({ tool, label, got: got[i], unsafe, unsafeBySafeAction, overHeld });
  });
  return out;
}

/** A share with its 95% Wilson score interval. */
export interface Share { k: number; n: number; p: number; low: number; high: number }

export function wilson(k: number, n: number, z = 1.96): Share {
  if (n === 0) return { k, n, p: 0, low: 0, high: 1 };
  const p = k / n;
  const d = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / d;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return { k, n, p, low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

export function formatShare(s: Share): string {
  return `${(100 * s.p).toFixed(1)}% (${s.k}/${s.n}, 95% CI ${(100 * s.low).toFixed(1)}–${(100 * s.high).toFixed(1)}%)`;
}

export interface SetScore {
  n: number;
  overall: number;
  perCategory: Map<Category, { n: number; right: number }>;
  unsafe: Share;
  /** Of the unsafe misses, those where only the classifier's safe actions of a multi-action tool pass and the label has no per-action breakdown. */
  unsafeBySafeAction: number;
  overHolds: Share;
  /** Tools whose classification says it leaned to the stricter of two readings. */
  leanedStrict: number;
}

/** Every blind set under test/: a `blind*` folder with `labels.json` and `servers/`, found by name so a new one is picked up. */
export function blindSets(root: string): string[] {
  return readdirSync(join(root, 'test')).filter((d) => /^blind\d*$/.test(d) && existsSync(join(root, 'test', d, 'labels.json')) && existsSync(join(root, 'test', d, 'servers'))).sort().map((d) => `test/${d}`);
}

/** Accuracy, unsafe misses and over-holds of one blind set; aggregates only. */
export function scoreSet(dir: string): SetScore {
  const labels = JSON.parse(readFileSync(join(dir, 'labels.json'), 'utf8')) as Record<string, Label>;
  const all: Scored[] = [];
  for (const file of readdirSync(join(dir, 'servers')).filter((f) => f.endsWith('.json')).sort()) {
    const slug = file.replace(/\.json$/, '');
    const data = JSON.parse(readFileSync(join(dir, 'servers', file), 'utf8')) as { server: { serverInfo?: { name?: string }; instructions?: string | null }; tools: ToolDefinition[] };
    all.push(...scoreServer(data.tools, { name: data.server.serverInfo?.name, instructions: data.server.instructions ?? undefined }, (t) => (Object.hasOwn(labels, `${slug}/${t.name}`) ? labels[`${slug}/${t.name}`] : undefined)));
  }
  const perCategory = new Map(CATEGORIES.map((c) => [c, { n: 0, right: 0 }]));
  for (const s of all) {
    const t = perCategory.get(s.label.category)!;
    t.n++;
    if (s.got.category === s.label.category) t.right++;
  }
  const risky = all.filter((s) => ['Execute', 'Destructive', 'Financial'].includes(s.label.category));
  const benign = all.filter((s) => s.label.category === 'Read' || s.label.category === 'Write');
  return {
    n: all.length,
    overall: all.filter((s) => s.got.category === s.label.category).length / all.length,
    perCategory,
    unsafe: wilson(risky.filter((s) => s.unsafe).length, risky.length),
    unsafeBySafeAction: risky.filter((s) => s.unsafeBySafeAction).length,
    overHolds: wilson(benign.filter((s) => s.overHeld).length, benign.length),
    leanedStrict: all.filter((s) => (s.got.signals as string[]).includes('leaned_strict')).length,
  };
}

export function formatSet(dir: string, s: SetScore, note = ''): string {
  const cats = CATEGORIES.map((c) => { const t = s.perCategory.get(c)!; return `${c} ${t.n ? (100 * t.right / t.n).toFixed(1) : '–'}% (${t.n})`; }).join(', ');
  return `${dir}${note}: ${(100 * s.overall).toFixed(1)}% of ${s.n} — ${cats}; unsafe misses ${formatShare(s.unsafe)}${s.unsafeBySafeAction ? ` (${s.unsafeBySafeAction} of them multi-action tools whose label gives no per-action categories, passed only for values the classifier reads as safe)` : ''}; over-holds ${formatShare(s.overHolds)}; leaned strict ${s.leanedStrict}`;
}
