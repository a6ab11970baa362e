// npm run bench: every benchmark, each against a baseline measured in the same run.
import { benchAblation } from './ablation.js';
import { benchClassify } from './classify.js';
import { benchDecisions } from './decisions.js';
import { benchGateway } from './gateway.js';
import { benchLatency } from './latency.js';
import { benchPlainPath } from './plain-path.js';
import { benchPool } from './pool.js';
import { benchPrune } from './prune.js';
import { benchResults } from './results.js';
import { benchSecrets } from './secrets.js';
import { benchSessions } from './sessions.js';
import { benchTelemetry } from './telemetry.js';

await benchDecisions();
await benchClassify();
await benchSecrets();
await benchResults();
await benchLatency();
await benchAblation();
await benchTelemetry();
await benchPlainPath();
await benchGateway();
await benchSessions();
await benchPool();
await benchPrune();
