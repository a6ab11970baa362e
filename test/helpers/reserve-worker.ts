// Reserves one unit `count` times against max `max` in a SQLite counter file, as fast as it can,
// and prints how many it was granted. Two of these at once must never be granted more than max.
import { openSqliteState } from '../../src/state/sqlite.js';

const [file, count, max] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const state = openSqliteState(file);
const now = Date.now();
const charge = { key: 'shared', amount: 1, max, expiresAt: now + 3_600_000 };
let granted = 0;
for (let i = 0; i < count; i++) if ((await state.counters.reserve([charge], now)) === -1) granted++;
await state.close();
console.log(granted);
