// The tuning loop's view: accuracy and mistakes on the training part only. The holdout servers
// are never printed here; only test/risk-corpus.test.ts reports their accuracy.
import { accuracy, classifyCorpus, DEV_BATCHES, formatAccuracy } from './corpus.js';

const training = classifyCorpus().filter((e) => !e.holdout);
console.log(formatAccuracy('training', accuracy(training)));
console.log(formatAccuracy('  of which the first corpus', accuracy(training.filter((e) => !e.dev))));
console.log(formatAccuracy('  of which the dev set', accuracy(training.filter((e) => e.dev))));
for (const b of DEV_BATCHES) console.log(formatAccuracy(`    ${b}`, accuracy(training.filter((e) => e.batch === b))));
const only = process.argv[2];
for (const e of training.filter((x) => x.got.category !== x.label && (!only || x.batch === only))) {
  console.log(`${e.server}/${e.tool.name}: want ${e.label}, got ${e.got.category} — ${(e.tool.description ?? '').replace(/\s+/g, ' ').slice(0, 100)}`);
}
