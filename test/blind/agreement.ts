// Inter-annotator agreement between two labellings of the blind set (no classifier involved).
// Usage: node --import tsx test/blind/agreement.ts [FIRST.json] [SECOND.json]
// Defaults: labels.json (first labeller) and labels-second.json (second labeller) beside this file.
// Prints agreement overall and per category, Cohen's kappa, the confusion matrix and every
// disagreement with both readers' reasons.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CATEGORIES = ['Read', 'Write', 'Execute', 'Destructive', 'Financial'] as const;
type Category = (typeof CATEGORIES)[number];
interface Label { category: Category; why: string }

function load(path: string): Map<string, Label> {
  const raw: unknown = JSON.parse(readFileSync(path, 'utf8'));
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`${path}: expected an object of labels`);
  const labels = new Map<string, Label>();
  for (const [key, value] of Object.entries(raw)) {
    const category = (value as Partial<Label> | null)?.category;
    if (!CATEGORIES.includes(category as Category)) throw new Error(`${path}: ${key} has no valid category`);
    labels.set(key, value as Label);
  }
  return labels;
}

/** Cohen's kappa for two raters over the same items: (p_o - p_e) / (1 - p_e). */
export function cohensKappa(pairs: Array<[string, string]>): number {
  const n = pairs.length;
  const firstCounts = new Map<string, number>();
  const secondCounts = new Map<string, number>();
  let agreed = 0;
  for (const [a, b] of pairs) {
    if (a === b) agreed++;
    firstCounts.set(a, (firstCounts.get(a) ?? 0) + 1);
    secondCounts.set(b, (secondCounts.get(b) ?? 0) + 1);
  }
  const observed = agreed / n;
  let expected = 0;
  for (const [value, count] of firstCounts) expected += (count / n) * ((secondCounts.get(value) ?? 0) / n);
  return expected === 1 ? 1 : (observed - expected) / (1 - expected);
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

function main(): void {
  const here = (name: string): string => fileURLToPath(new URL(name, import.meta.url));
  const [firstPath = here('labels.json'), secondPath = here('labels-second.json')] = process.argv.slice(2);
  const first = load(firstPath);
  const second = load(secondPath);
  const onlyFirst = [...first.keys()].filter((k) => !second.has(k));
  const onlySecond = [...second.keys()].filter((k) => !first.has(k));
  if (onlyFirst.length || onlySecond.length) {
    throw new Error(`the labellings cover different tools: only first ${onlyFirst.join(', ') || '-'}; only second ${onlySecond.join(', ') || '-'}`);
  }

  const keys = [...first.keys()].sort();
  const pairs: Array<[Category, Category]> = keys.map((k) => [first.get(k)!.category, second.get(k)!.category]);
  const agreed = pairs.filter(([a, b]) => a === b).length;
  console.log(`tools: ${keys.length}`);
  console.log(`overall agreement: ${agreed}/${keys.length} = ${pct(agreed / keys.length)}; Cohen's kappa ${cohensKappa(pairs).toFixed(3)}`);

  console.log('\nper category (first = labels.json, second = labels-second.json):');
  console.log('category     first second both  of-first of-second specific  kappa(one-vs-rest)');
  for (const c of CATEGORIES) {
    const inFirst = pairs.filter(([a]) => a === c).length;
    const inSecond = pairs.filter(([, b]) => b === c).length;
    const both = pairs.filter(([a, b]) => a === c && b === c).length;
    const binary = pairs.map(([a, b]): [string, string] => [String(a === c), String(b === c)]);
    // "of-first": share of the first labeller's c-tools the second also put in c (and vice versa);
    // "specific": positive specific agreement 2·both / (first + second).
    console.log(
      `${c.padEnd(12)} ${String(inFirst).padStart(5)} ${String(inSecond).padStart(6)} ${String(both).padStart(4)}  ` +
      `${pct(inFirst ? both / inFirst : 1).padStart(8)} ${pct(inSecond ? both / inSecond : 1).padStart(9)} ` +
      `${pct(inFirst + inSecond ? (2 * both) / (inFirst + inSecond) : 1).padStart(8)}  ${cohensKappa(binary).toFixed(3)}`,
    );
  }

  console.log('\nconfusion (rows first, columns second):');
  console.log(''.padEnd(12) + CATEGORIES.map((c) => c.slice(0, 5).padStart(7)).join(''));
  for (const a of CATEGORIES) {
    const row = CATEGORIES.map((b) => String(pairs.filter(([x, y]) => x === a && y === b).length).padStart(7));
    console.log(a.padEnd(12) + row.join(''));
  }

  const disagreements = keys.filter((k) => first.get(k)!.category !== second.get(k)!.category);
  console.log(`\ndisagreements: ${disagreements.length}`);
  for (const k of disagreements) {
    const a = first.get(k)!;
    const b = second.get(k)!;
    console.log(`- ${k}: first ${a.category}, second ${b.category}\n    first:  ${a.why}\n    second: ${b.why}`);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // A closed pipe (`| head`) ends the listing quietly; bad input is one line, not a stack trace.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => process.exit(err.code === 'EPIPE' ? 0 : 1));
  try {
    main();
  } catch (err) {
    console.error(`agreement: ${(err as Error).message}`);
    process.exit(1);
  }
}
