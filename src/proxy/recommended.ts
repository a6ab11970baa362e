import { CompiledPolicy, type Engine } from '../engine/index.js';
import type { Logger } from '../log.js';
import { validatePolicyObject } from '../policy/index.js';
import { CATEGORIES, classifyTools, recommendPolicy, type RecommendOptions, type ToolDefinition } from '../risk/index.js';
import type { PolicySession } from './session.js';

/** What applies before the server has listed its tools: nothing is callable yet. */
export const PENDING_POLICY = { version: '1', default: 'deny' } as const;

export function compileObject(policy: unknown, origin?: 'recommended' | 'pending'): CompiledPolicy {
  const result = validatePolicyObject(policy);
  if (!result.ok) throw new Error(`internal error: the recommended policy is invalid at ${result.issues[0].pointer}: ${result.issues[0].message}`);
  return new CompiledPolicy(result.policy, result.hash, origin);
}

/**
 * Keeps the recommended policy in step with what the server lists: every tools/list answer is
 * classified (all pages) and the policy recomputed before the answer reaches the client.
 */
export function recommendedPolicyFeed(engine: Engine, serverName: string, session: () => PolicySession, log: Logger, opts: RecommendOptions = {}) {
  const tools = new Map<string, ToolDefinition>();
  let announced = '';
  return (page: unknown[], first: boolean) => {
    if (first) tools.clear();
    for (const t of page) if (t && typeof t === 'object' && typeof (t as ToolDefinition).name === 'string') tools.set((t as ToolDefinition).name, t as ToolDefinition);
    const list = [...tools.values()];
    const classified = classifyTools(list, { name: serverName, instructions: session().serverInstructions });
    engine.setPolicy(compileObject(recommendPolicy(classified, list, serverName, opts), 'recommended'));
    const summary = CATEGORIES.map((c) => `${classified.filter((x) => x.category === c).length} ${c}`).join(', ');
    if (summary !== announced) {
      announced = summary;
      log.info({ server: serverName, tools: list.length, policyHash: engine.current.hash }, `no -p given: applying toolgate's recommended policy for ${serverName} (${summary}; write it out with toolgate policy recommend)`);
    }
  };
}

