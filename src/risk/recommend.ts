import type { PolicyInput } from '../policy/schema.js';
import { refinementsFor, SSRF_DENIAL } from './leaks.js';
import type { Category, Classification, ToolDefinition } from './types.js';

/** The recommended rule per category (SPEC section 5). */
export const RULE_BY_CATEGORY: Record<Category, { verdict: Verdict; perMinute?: number }> = {
  Read: { verdict: 'Allowed' },
  Write: { verdict: 'Rate-limited', perMinute: 30 },
  Execute: { verdict: 'Rate-limited', perMinute: 10 },
  Destructive: { verdict: 'Needs approval' },
  Financial: { verdict: 'Needs approval' },
};

export type Verdict = 'Allowed' | 'Rate-limited' | 'Needs approval' | 'Hidden';

/** A default daily spend cap, in the amount argument's own units (usually minor units: cents). */
export const DEFAULT_SPEND_CAP = 50_000;
const AMOUNT = /^(amount|amount_\w+|\w+_amount|total|total_amount|price|unit_amount|value|sum)$/i;

/** The numeric amount argument of a tool, if its input schema has one. */
export function amountArgument(tool: ToolDefinition): string | undefined {
  const props = (tool.inputSchema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  const names = Object.keys(props).filter((n) => AMOUNT.test(n));
  const numeric = names.find((n) => ['number', 'integer'].includes(String(props[n].type)) || (Array.isArray(props[n].type) && (props[n].type as string[]).some((t) => t === 'number' || t === 'integer')));
  return numeric ?? names.find((n) => /amount/i.test(n));
}

type Entry = NonNullable<PolicyInput['tools']>[string];

export interface RecommendOptions {
  /**
   * The person at the client is the operator (toolgate run): Destructive tools may also be
   * approved by them through MCP elicitation (`via` gains `client`).
   */
  clientApproves?: boolean;
}

/**
 * The recommended entry for one tool. Counter names follow the seeds: `<tool>_rate`. Refinements
 * (src/risk/leaks.ts) tighten it: a Read that returns secrets needs approval; a URL fetcher is
 * limited like a Write and refuses private addresses.
 */
export function recommendedEntry(c: Classification, tool?: ToolDefinition, opts: RecommendOptions = {}): Entry {
  const refinements = refinementsFor(c, tool);
  const secrets = refinements.find((r) => r.id === 'returns-secrets');
  const fetches = refinements.find((r) => r.id === 'fetches-url');
  const rule = secrets ? RULE_BY_CATEGORY.Destructive : fetches && c.category === 'Read' ? RULE_BY_CATEGORY.Write : RULE_BY_CATEGORY[c.category];
  const why = refinements.length ? ` (${refinements.map((r) => `attack: ${r.attack}`).join(', ')})` : '';
  const description = `${c.category}/${c.risk}: ${rule.verdict.toLowerCase()}${why}`;
  const denyIf = fetches ? { deny_if: fetches.paths!.map((path) => ({ conditions: [{ path, op: 'private_address' as const, value: true }], on_deny: SSRF_DENIAL })) } : {};
  if (rule.verdict === 'Allowed') return {};
  if (rule.verdict === 'Rate-limited') {
    const limits = [{ counter: `${c.name}_rate`, window: 'minute' as const, max: rule.perMinute!, scope: 'grant' as const }];
    return refinements.length ? { description, ...denyIf, limits } : { limits };
  }
  const entry: Entry = { description, action: 'approve', ...denyIf };
  if (opts.clientApproves && c.category === 'Destructive') entry.approval = { via: ['client', 'cli', 'api', 'dashboard', 'webhook'] };
  const amount = c.category === 'Financial' && tool ? amountArgument(tool) : undefined;
  if (amount) {
    entry.limits = [{
      counter: `${c.name}_spend`, window: 'day', max: DEFAULT_SPEND_CAP, scope: 'server', increment_from: `args.${amount}`,
      on_deny: `Daily spend cap for ${c.name} reached (${DEFAULT_SPEND_CAP} in the units of ${amount}).`,
    }];
  }
  return entry;
}

/** `default: deny`, one entry per tool by its category. */
export function recommendPolicy(classifications: readonly Classification[], tools: readonly ToolDefinition[] = [], serverName?: string, opts: RecommendOptions = {}): PolicyInput {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const entries: Record<string, Entry> = {};
  for (const c of classifications) entries[c.name] = recommendedEntry(c, byName.get(c.name), opts);
  return {
    version: '1',
    description: `Recommended by toolgate${serverName ? ` for ${serverName}` : ''}: Read allowed, Write 30/min and Execute 10/min per grant, Destructive and Financial need approval; a Read that returns credentials needs approval, and a URL fetcher is limited like a Write and refuses private addresses.`,
    default: 'deny',
    tools: entries,
  };
}

export function verdictOf(c: Classification, hidden = false, tool?: ToolDefinition): Verdict {
  if (hidden) return 'Hidden';
  const entry = recommendedEntry(c, tool);
  return entry.action === 'approve' ? 'Needs approval' : entry.limits?.length ? 'Rate-limited' : 'Allowed';
}
