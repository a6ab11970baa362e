// npm run bench: every benchmark, each against a baseline measured in the same run.
import { benchDecisions } from './decisions.js';
import { benchLatency } from './latency.js';

await benchDecisions();
await benchLatency();
