import { z } from 'zod';

/**
 * The policy document, version "1" (SPEC section 2). This one zod schema is the source of the
 * TypeScript types, the runtime validation and the published JSON Schema (`toolgate policy schema`).
 * Objects are strict: a misspelt key in a security policy must be an error, not silently ignored.
 */

export const OPERATORS = [
  'eq', 'neq', 'in', 'not_in', 'lt', 'lte', 'gt', 'gte', 'regex',
  'contains', 'starts_with', 'ends_with', 'exists', 'len_lte', 'len_gte', 'private_address',
] as const;
export type Operator = (typeof OPERATORS)[number];

export const WINDOWS = ['second', 'minute', 'hour', 'day'] as const;
export const SCOPES = ['grant', 'session', 'server', 'global'] as const;
export const APPROVAL_CHANNELS = ['dashboard', 'cli', 'api', 'webhook', 'client'] as const;

export const ConditionSchema = z.strictObject({
  path: z.string().min(1).describe('args.<dot.path> (with [n] and [*]), tool.name, grant.label, grant.tags, session.id, session.client, server.name, time.hour_utc or time.weekday'),
  op: z.enum(OPERATORS),
  value: z.unknown().optional().describe('What the value at path is compared with; for exists, true (default) or false'),
});

export const RuleSchema = z.strictObject({
  conditions: z.array(ConditionSchema).default([]),
  on_deny: z.string().optional().describe('Message the agent reads when this item denies the call'),
});

export const ApproveRuleSchema = z.strictObject({
  conditions: z.array(ConditionSchema).default([]),
  reason: z.string().optional().describe('Why the call needs approval, shown to the approver'),
});

export const WindowSchema = z.union([
  z.enum(WINDOWS),
  z.number().int().positive().describe('Window length in seconds'),
], { error: 'window must be "second", "minute", "hour", "day" or a whole number of seconds' });

export const LimitSchema = z.strictObject({
  counter: z.string().min(1).describe('Counter name; limits with the same counter, window and scope share one count'),
  window: WindowSchema,
  max: z.number().nonnegative(),
  scope: z.enum(SCOPES).default('grant'),
  increment_from: z.string().optional().describe('args.<path> to a number added to the counter instead of 1 (spend caps)'),
  on_deny: z.string().optional(),
});

export const DurationSchema = z.string().regex(/^\d+(ms|s|m|h|d)$/, 'a duration such as "30s", "5m", "1h"');

export const ApprovalSchema = z.strictObject({
  timeout: DurationSchema.default('5m').describe('How long a held call waits for a decision before it is denied'),
  via: z.array(z.enum(APPROVAL_CHANNELS)).optional().describe('Channels that may approve; default all but client'),
  mode: z.enum(['hold', 'retry']).default('hold').describe('hold: the call waits; retry: it is denied at once with the approval id, and passes when made again after approval'),
  valid_for: DurationSchema.default('10m').describe('How long an approval waits for its call to be made again (after the client gave up, or in retry mode)'),
  max_pending: z.number().int().positive().default(20).describe('Calls of one grant that may wait for approval at once; past it a new held call is denied at once'),
});

/** A condition on a tool's result (SPEC section 11): `result.text` (all text content, joined), `result.structured` (structuredContent as JSON), `result.is_error`, `result.bytes`, or a call's context path. */
export const ResultConditionSchema = z.strictObject({
  path: z.string().min(1).describe('result.text, result.structured, result.is_error, result.bytes, or tool.name, grant.label, grant.tags, session.id, session.client, server.name, time.hour_utc, time.weekday'),
  op: z.enum(OPERATORS),
  value: z.unknown().optional(),
});

export const ResultsSchema = z.strictObject({
  redact: z.array(z.literal('secrets')).optional().describe('What to replace in results with a marker naming its kind; [] turns redaction off for a tool'),
  max_bytes: z.number().int().positive().optional().describe('Most bytes (UTF-8) of text content a result may carry; past it text is cut with a marker, structuredContent dropped'),
  on_oversize: z.enum(['truncate', 'deny']).optional().describe('truncate (default): cut text and drop structuredContent past max_bytes; deny: answer with an error result instead'),
  deny_if: z.array(z.strictObject({
    conditions: z.array(ResultConditionSchema).default([]),
    on_deny: z.string().optional().describe('Message the agent reads instead of the result'),
  })).optional(),
  flag_if: z.array(z.strictObject({
    conditions: z.array(ResultConditionSchema).default([]),
    reason: z.string().optional().describe('Why the result is flagged, in the audit and the result'),
  })).optional(),
}).describe("What comes back from a tool (SPEC section 11): a tool's fields override the server's; results: {} keeps them");

/**
 * What happens to a tool whose definition carries text aimed at the model (SPEC 11, src/poison):
 * hide removes it from tools/list and denies calls to it when a finding is hide-level; warn logs
 * and audits every finding; allow does neither.
 */
export const PoisonedSchema = z.enum(['hide', 'warn', 'allow']);

export const FLOW_ROLE_NAMES = ['private', 'untrusted', 'egress'] as const;
export const FlowRoleSchema = z.enum(FLOW_ROLE_NAMES);

/**
 * A data-flow rule (SPEC 11): once the agent has touched every role in `after` (a call of such a
 * tool forwarded and answered without error, within `window`), a call of a tool with a role under
 * `then` is held for approval or denied.
 */
export const FlowRuleSchema = z.strictObject({
  after: z.array(FlowRoleSchema).min(1).describe('Roles the agent must all have touched (private, untrusted, egress)'),
  then: z.partialRecord(FlowRoleSchema, z.enum(['approve', 'deny'])).describe('What happens to a call of a tool with this role then, e.g. {"egress": "approve"}'),
  window: DurationSchema.default('1h').describe('How long a touched role is remembered for this rule'),
  on_deny: z.string().optional().describe('Message the agent reads, before the list of earlier calls'),
  approval: ApprovalSchema.optional(),
});

export const ToolEntrySchema = z.strictObject({
  description: z.string().optional(),
  action: z.enum(['allow', 'deny', 'approve']).default('allow'),
  on_deny: z.string().optional(),
  require: z.array(RuleSchema).default([]),
  deny_if: z.array(RuleSchema).default([]),
  approve_if: z.array(ApproveRuleSchema).default([]),
  approval: ApprovalSchema.optional(),
  limits: z.array(LimitSchema).default([]),
  results: ResultsSchema.optional(),
  poisoned: PoisonedSchema.optional().describe('What to do when this tool\'s definition carries text aimed at the model (overrides the top-level poisoned)'),
  flow: z.array(FlowRoleSchema).optional().describe('The tool\'s flow roles, replacing what the classifier found ([] for none)'),
});

export const AllToolsSchema = z.strictObject({
  require: z.array(RuleSchema).default([]),
  deny_if: z.array(RuleSchema).default([]),
  limits: z.array(LimitSchema).default([]),
});

export const PolicySchema = z.strictObject({
  $schema: z.string().optional(),
  // YAML reads `version: 1` as a number; it means the same.
  version: z.union([z.literal('1'), z.literal(1).transform(() => '1' as const)], { error: 'version must be "1"' }),
  description: z.string().optional(),
  default: z.enum(['allow', 'deny']).default('deny').describe('What happens to a tool with no entry under tools'),
  mode: z.enum(['enforce', 'shadow']).default('enforce'),
  hide: z.array(z.string().min(1)).default([]),
  all_tools: AllToolsSchema.optional(),
  pins: z.strictObject({ on_change: z.enum(['warn', 'block']).default('warn') }).optional(),
  poisoned: PoisonedSchema.optional().describe('Tools whose definitions carry text aimed at the model (hidden characters, instructions to ignore, conceal, read credentials or send data elsewhere): hide, warn (the default) or allow; a tool entry may override it'),
  tools: z.record(z.string().min(1), ToolEntrySchema).default({}),
  results: ResultsSchema.optional().describe("What comes back from every tool of this server (SPEC section 11)"),
  flows: z.array(FlowRuleSchema).default([]).describe('Data-flow rules across an agent\'s calls (SPEC 11), e.g. [{"after": ["private", "untrusted"], "then": {"egress": "approve"}}]'),
});

export type Policy = z.output<typeof PolicySchema>;
export type PolicyInput = z.input<typeof PolicySchema>;
export type ToolEntry = z.output<typeof ToolEntrySchema>;
export type Limit = z.output<typeof LimitSchema>;
export type Rule = z.output<typeof RuleSchema>;
export type ApproveRule = z.output<typeof ApproveRuleSchema>;
export type Condition = z.output<typeof ConditionSchema>;
export type ResultsPolicy = z.output<typeof ResultsSchema>;
export type FlowRule = z.output<typeof FlowRuleSchema>;

export function policyJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(PolicySchema, { io: 'input' }) as Record<string, unknown>;
  return {
    ...schema,
    $id: 'https://toolgate.dev/schema/policy-v1.json',
    title: 'Toolgate policy (version 1)',
  };
}
