import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { classifyTools, type ToolDefinition } from '../src/risk/index.js';
import { blindSets, formatSet, scoreSet } from '../test/helpers/safety.js';
import { fmt, median } from './stats.js';

const CORPUS = resolve(import.meta.dirname, '../test/corpus/servers');

/** Tools classified per second, over the real corpus repeated to 10,000 distinct definitions. */
export async function benchClassify(runs = 5): Promise<number> {
  const real: ToolDefinition[] = readdirSync(CORPUS).flatMap((f) => JSON.parse(readFileSync(join(CORPUS, f), 'utf8')).tools);
  const tools = Array.from({ length: 10_000 }, (_, i) => ({ ...real[i % real.length], description: `${real[i % real.length].description ?? ''} (${i})` }));
  const rates: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    classifyTools(tools, { name: 'bench' });
    rates.push(tools.length / ((performance.now() - start) / 1000));
  }
  const rate = median(rates);
  console.log(`\nrisk classifier: ${fmt(rate)} tools/s (10,000 real tool definitions from the corpus; target: 10,000 in under a second)`);
  // What the recommended policy lets through on every blind set, judged with the real engine (aggregates only).
  const root = resolve(import.meta.dirname, '..');
  for (const dir of blindSets(root)) console.log(`  ${formatSet(dir, scoreSet(join(root, dir)))}`);
  return rate;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchClassify();
