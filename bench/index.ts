// npm run bench: every benchmark, each against a baseline measured in the same run.
import { benchAblation } from './ablation.js';
import { benchClassify } from './classify.js';
import { benchDecisions } from './decisions.js';
import { benchGateway } from './gateway.js';
import { benchLatency } from './latency.js';
import { benchSessions } from './sessions.js';

await benchDecisions();
await benchClassify();
await benchLatency();
await benchAblation();
await benchGateway();
await benchSessions();
