import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { findSecrets } from '../src/secrets/index.js';
import { fmt, median } from './stats.js';

const ROOT = resolve(import.meta.dirname, '..');
const MB = 1 << 20;

/** Ordinary tool results: source files, tool definitions (JSON) and docs of this repository, repeated to 1 MB, with a few real-looking secrets. */
export function ordinary(size: number): string {
  const parts: string[] = [];
  for (const dir of ['src/gateway', 'src/risk', 'docs']) for (const f of readdirSync(join(ROOT, dir)).filter((n) => /\.(ts|md)$/.test(n))) parts.push(readFileSync(join(ROOT, dir, f), 'utf8'));
  for (const f of readdirSync(join(ROOT, 'test/corpus/servers')).slice(0, 30)) parts.push(readFileSync(join(ROOT, 'test/corpus/servers', f), 'utf8'));
  parts.push('AKIAIOSFODNN7EXAMPLE', 'Authorization: Bearer Zx9Qm2Lr7Tk4Wn8Yp3Hs', 'DB_PASSWORD=hunter22', `ghp_${'a1'.repeat(18)}`);
  let text = parts.join('\n');
  while (text.length < size) text += text;
  return text.slice(0, size);
}

/**
 * Built to make every rule work hard: long runs of each rule's trigger packed so every position
 * is a candidate that fails late (a run one short of the length a token needs, a name without a
 * value, a header without an end), interleaved, to 1 MB.
 */
export function crafted(size: number): string {
  const units = [
    'sk-' + 'a'.repeat(19) + ' ', 'eyJ-'.repeat(8) + '.eyJab.', 'A_KEY=' , '_KEY_TOKEN_SECRET', 'x://u:' , 'a.b://', '"api_key": 1,',
    'Bearer  aaaaaaa ', 'basic AAAAAAA=', '-----BEGIN PRIVATE KEY-----\nAAAA\n', 'ghp_' + 'A'.repeat(35) + ' ', 'AKIA' + 'A'.repeat(15) + ' ',
    'xoxb-' + 'a'.repeat(9) + ' ', 'hooks.slack.com/services/' + 'a'.repeat(19) + ' ', 'AccountKey=' + 'A'.repeat(19) + ';', '"password":"x',
    'password= ', 'a_token_', 'db_secret: *****', '12345678:AA' + 'a'.repeat(33) + ' ', 'hf_' + 'a'.repeat(33) + ' ', 'discord.com/api/webhooks/123456789/' + 'a'.repeat(39) + ' ',
  ];
  const blocks = units.map((u) => u.repeat(Math.ceil(4096 / u.length)));
  let text = '';
  for (let i = 0; text.length < size; i++) text += blocks[i % blocks.length];
  return text.slice(0, size);
}

function time(text: string, runs: number): number {
  const xs: number[] = [];
  for (let r = 0; r < runs; r++) {
    // CPU time of this process, not wall time: on a shared machine the wall clock also counts the
    // time other processes had the core.
    const start = process.cpuUsage();
    findSecrets(text);
    const used = process.cpuUsage(start);
    xs.push((used.user + used.system) / 1000);
  }
  return median(xs);
}

/** Medians of the secret detector over an ordinary 1 MB text, a crafted 1 MB one, and a typical 2 KB result. */
export async function benchSecrets(runs = 21): Promise<{ ordinaryMs: number; craftedMs: number; typicalUs: number }> {
  const big = ordinary(MB);
  const hostile = crafted(MB);
  const typical = ordinary(2048);
  time(big, 3); time(hostile, 3);
  const ordinaryMs = time(big, runs);
  const craftedMs = time(hostile, runs);
  const single: string[] = [
    'Bearer '.repeat(MB / 7), 'eyJ'.repeat(MB / 3), 'eyJa.'.repeat(MB / 5), 'AKIA'.repeat(MB / 4), '-----BEGIN PRIVATE KEY-----\n'.repeat(MB / 28),
    'a://'.repeat(MB / 4), 'x://u:'.repeat(MB / 6), 'A_KEY='.repeat(MB / 6), 'sk-'.repeat(MB / 3), '"password":"'.repeat(MB / 12), 'key"'.repeat(MB / 4),
  ];
  const worstSingle = Math.max(...single.map((t) => time(t, 5)));
  // 2 KB is below the CPU clock's resolution: wall time of a batch, the median of 21 batches.
  const batches: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = performance.now();
    for (let k = 0; k < 500; k++) findSecrets(typical);
    batches.push(((performance.now() - start) / 500) * 1000);
  }
  const typicalUs = median(batches);
  console.log(`\nsecret detector (findSecrets), medians of ${runs} (CPU time):`);
  console.log(`  ordinary 1 MB: ${fmt(ordinaryMs, 1)} ms (budget 20 ms)`);
  console.log(`  crafted 1 MB:  ${fmt(craftedMs, 1)} ms (every rule's trigger packed to fail late; budget: about the ordinary time)`);
  console.log(`  worst of ${single.length} single-trigger 1 MB runs: ${fmt(worstSingle, 1)} ms`);
  console.log(`  typical 2 KB:  ${fmt(typicalUs, 1)} µs (wall time)`);
  return { ordinaryMs, craftedMs, typicalUs };
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSecrets();
