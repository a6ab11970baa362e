// Reserves one unit `count` times against max `max` in a SQLite counter file, as fast as it can
// (`parallel` at a time: made in one turn, they are committed as groups), and prints how many it
// was granted. Two of these at once must never be granted more than max.
import { openSqliteState } from '../../src/state/sqlite.js';

const [file, count, max, parallel] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5] ?? 1)];
const state = openSqliteState(file);
const now = Date.now();
const charge = { key: 'shared', amount: 1, max, expiresAt: now + 3_600_000 };
let granted = 0;
for (let i = 0; i < count; i += parallel) {
  const results = await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, () => state.counters.reserveUnlessKilled!('s', [charge], now)));
  granted += results.filter((r) => r === -1).length;
}
await state.close();
console.log(granted);
