import type { PolicyInput } from '../policy/schema.js';
import { refinementsFor, SSRF_DENIAL } from './leaks.js';
import { CONFIDENT_READ, SEVERITY, type Category, type Classification, type ToolDefinition } from './types.js';

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

function spendCap(name: string, amount: string): NonNullable<Entry['limits']>[number] {
  return {
    counter: `${name}_spend`, window: 'day', max: DEFAULT_SPEND_CAP, scope: 'server', increment_from: `args.${amount}`,
    on_deny: `Daily spend cap for ${name} reached (${DEFAULT_SPEND_CAP} in the units of ${amount}).`,
  };
}

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
  // Uncertainty leans strict: a Read that is not confidently one is limited like a Write, so a tool that runs is never unlimited.
  const unsure = c.category === 'Read' && c.confidence < CONFIDENT_READ;
  const rule = secrets || c.hold ? RULE_BY_CATEGORY.Destructive : (fetches || unsure) && c.category === 'Read' ? RULE_BY_CATEGORY.Write : RULE_BY_CATEGORY[c.category];
  const cue = c.hold ? `its ${c.hold.from === 'schema' ? (c.hold.kind === 'opens' ? 'schema takes' : 'action argument offers') : `${c.hold.from} says`} “${c.hold.word}”` : '';
  const doubt = unsure && !secrets && !c.hold ? `not confidently Read (${c.confidence})` : '';
  const why = refinements.length || cue || doubt ? ` (${[cue, doubt, ...refinements.map((r) => `attack: ${r.attack}`)].filter(Boolean).join(', ')})` : '';
  const description = `${c.category}/${c.risk}: ${rule.verdict.toLowerCase()}${why}`;
  const denyIf = fetches ? { deny_if: fetches.paths!.map((path) => ({ conditions: [{ path, op: 'private_address' as const, value: true }], on_deny: SSRF_DENIAL })) } : {};
  if (rule.verdict === 'Allowed') return {};
  if (rule.verdict === 'Rate-limited') {
    const limits = [{ counter: `${c.name}_rate`, window: 'minute' as const, max: rule.perMinute!, scope: 'grant' as const }];
    return refinements.length || doubt ? { description, ...denyIf, limits } : { limits };
  }
  if (c.actions && (c.category === 'Destructive' || c.category === 'Financial')) return multiActionEntry(c, c.actions, denyIf, opts, tool);
  const entry: Entry = { description, action: 'approve', ...denyIf };
  if (opts.clientApproves && c.category === 'Destructive') entry.approval = { via: ['client', 'cli', 'api', 'dashboard', 'webhook'] };
  const amount = c.category === 'Financial' && tool ? amountArgument(tool) : undefined;
  if (amount) entry.limits = [spendCap(c.name, amount)];
  return entry;
}

/**
 * A multi-action tool: held by allowlist. A call waits for approval unless its action argument is
 * present and exactly one of the values known to be safe — so the dangerous values, a value the
 * server adds later, another spelling ("Delete") and a missing argument the server defaults are
 * all held (a missing path makes every condition but `exists` false, hence the first item). Calls
 * with a safe value get the ordinary limit of the most dangerous safe value.
 */
function multiActionEntry(c: Classification, actions: NonNullable<Classification['actions']>, denyIf: object, opts: RecommendOptions, tool?: ToolDefinition): Entry {
  const path = `args.${actions.param}`;
  const held = Object.entries(actions.values).filter(([v]) => !actions.safe.includes(v)).map(([v]) => v);
  const safeCategory = actions.safe.map((v) => actions.values[v]).reduce<Category>((m, x) => (SEVERITY[x] > SEVERITY[m] ? x : m), 'Read');
  const perMinute = RULE_BY_CATEGORY[safeCategory].perMinute;
  const entry: Entry = {
    description: `${c.category}/${c.risk}: needs approval unless ${actions.param} is one of ${actions.safe.join(', ')} (${held.join(', ')} and any other value need approval)${perMinute ? `; those are limited like ${safeCategory} (${perMinute}/min)` : ''}`,
    ...denyIf,
    approve_if: [
      { conditions: [{ path, op: 'exists', value: false }], reason: `No ${actions.param} given: the server may default to a dangerous action.` },
      { conditions: [{ path, op: 'not_in', value: actions.safe }], reason: `${actions.param} is not one of ${actions.safe.join(', ')}: ${held.length ? `${held.join(', ')} and any other value need` : 'any other value needs'} approval.` },
    ],
  };
  if (opts.clientApproves && c.category === 'Destructive') entry.approval = { via: ['client', 'cli', 'api', 'dashboard', 'webhook'] };
  if (perMinute) entry.limits = [{ counter: `${c.name}_rate`, window: 'minute', max: perMinute, scope: 'grant' }];
  const amount = c.category === 'Financial' && tool ? amountArgument(tool) : undefined;
  if (amount) entry.limits = [...(entry.limits ?? []), spendCap(c.name, amount)];
  return entry;
}

/** `default: deny`, one entry per tool by its category. */
export function recommendPolicy(classifications: readonly Classification[], tools: readonly ToolDefinition[] = [], serverName?: string, opts: RecommendOptions = {}): PolicyInput {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const entries: Record<string, Entry> = {};
  for (const c of classifications) entries[c.name] = recommendedEntry(c, byName.get(c.name), opts);
  return {
    version: '1',
    description: `Recommended by toolgate${serverName ? ` for ${serverName}` : ''}: Read allowed, Write 30/min and Execute 10/min per grant, Destructive and Financial need approval (a multi-action tool only for actions not known to be safe); a Read that returns credentials needs approval, and a URL fetcher is limited like a Write and refuses private addresses; secrets in results are redacted, a tool whose definition carries text aimed at the model is hidden, and once an agent has read private data and untrusted content within an hour, a tool that can send data out needs approval.`,
    default: 'deny',
    poisoned: 'hide',
    tools: entries,
    // Secrets in what comes back (results, resources, prompts, errors, logs) are replaced by a marker naming their kind (SPEC section 11).
    results: { redact: ['secrets'] },
    // The lethal trifecta (SPEC 11): once an agent has read private data and taken in content someone else wrote, a way out waits for a person.
    flows: [{
      after: ['private', 'untrusted'], then: { egress: 'approve' }, window: '1h',
      ...(opts.clientApproves ? { approval: { via: ['client', 'cli', 'api', 'dashboard', 'webhook'] } } : {}),
    }],
  };
}

export function verdictOf(c: Classification, hidden = false, tool?: ToolDefinition): Verdict {
  if (hidden) return 'Hidden';
  const entry = recommendedEntry(c, tool);
  return entry.action === 'approve' || entry.approve_if?.length ? 'Needs approval' : entry.limits?.length ? 'Rate-limited' : 'Allowed';
}
