import { parse } from 'yaml';
import { pointerOf } from './check.js';
import type { PolicyInput } from './schema.js';

/**
 * Converts an Intercept (PolicyLayer's open-source proxy) YAML policy into a toolgate policy.
 * Intercept rules allow a call when every condition holds, so argument conditions become
 * `require` items; `state.<scope>.<counter>` conditions with their `state` block, and the
 * `rate_limit: N/window` shorthand, become limits. Intercept counters are shared by everyone
 * behind the proxy, so limits get `scope: server`. Whatever has no exact equivalent is listed
 * in `notes` with its pointer in the source.
 */

export interface ImportResult {
  policy: PolicyInput;
  notes: string[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

const WINDOWS = new Set(['second', 'minute', 'hour', 'day']);

interface Section {
  require: { conditions: Obj[]; on_deny?: string }[];
  deny_if: { conditions: Obj[]; on_deny?: string }[];
  limits: Obj[];
  action?: 'deny';
  on_deny?: string;
}

function convertRule(tool: string, rule: Obj, at: (string | number)[], out: Section, notes: string[]): void {
  const where = pointerOf(at);
  const name = typeof rule.name === 'string' ? rule.name : undefined;
  const onDeny = typeof rule.on_deny === 'string' ? rule.on_deny : undefined;
  for (const key of Object.keys(rule)) {
    if (!['name', 'action', 'on_deny', 'conditions', 'state', 'rate_limit'].includes(key)) notes.push(`${where}/${key}: field "${key}" has no toolgate equivalent and was dropped`);
  }
  const counterBase = tool === '*' ? '_global' : tool;

  if (rule.action === 'deny') {
    if (tool === '*') out.deny_if.push({ conditions: [], ...(onDeny ? { on_deny: onDeny } : {}) });
    else { out.action = 'deny'; if (onDeny) out.on_deny = onDeny; }
    return;
  }
  if (rule.action !== undefined && rule.action !== 'evaluate') {
    notes.push(`${where}/action: unknown action ${JSON.stringify(rule.action)}; the rule was dropped`);
    return;
  }

  if (rule.rate_limit !== undefined) {
    const m = /^\s*(\d+)\s*\/\s*(\w+)\s*$/.exec(String(rule.rate_limit));
    if (!m || !WINDOWS.has(m[2])) {
      notes.push(`${where}/rate_limit: cannot read ${JSON.stringify(rule.rate_limit)} (expected N/minute|hour|day); dropped`);
      return;
    }
    out.limits.push({
      counter: `${counterBase}_rate_${m[2]}`, window: m[2], max: Number(m[1]), scope: 'server',
      on_deny: onDeny ?? `Rate limit of ${m[1]} per ${m[2]} reached. Try again later.`,
    });
    return;
  }

  const conditions = Array.isArray(rule.conditions) ? rule.conditions.filter(isObj) : [];
  const argConditions: Obj[] = [];
  const state = isObj(rule.state) ? rule.state : undefined;
  conditions.forEach((c, i) => {
    const cAt = `${where}/conditions/${i}`;
    const path = typeof c.path === 'string' ? c.path : '';
    if (path.startsWith('state.')) {
      const counter = path.split('.').slice(2).join('.');
      if (!state || state.counter !== counter) {
        notes.push(`${cAt}: condition on ${path} has no matching state block; dropped`);
        return;
      }
      const window = String(state.window);
      if (!WINDOWS.has(window)) {
        notes.push(`${where}/state/window: unknown window ${JSON.stringify(state.window)}; the limit was dropped`);
        return;
      }
      const value = Number(c.value);
      let max: number;
      if (c.op === 'lte') max = value;
      else if (c.op === 'lt') {
        max = value - 1;
        notes.push(`${cAt}: "lt ${value}" became max ${max} (toolgate limits are inclusive; exact for whole-number increments)`);
      } else {
        notes.push(`${cAt}: a state condition with op "${String(c.op)}" cannot be a limit; dropped`);
        return;
      }
      const limit: Obj = { counter: `${counterBase}_${counter}`, window, max, scope: 'server' };
      if (typeof state.increment_from === 'string') limit.increment_from = state.increment_from;
      else if (state.increment !== undefined && Number(state.increment) !== 1) {
        const inc = Number(state.increment);
        limit.max = Math.floor(max / inc);
        notes.push(`${where}/state/increment: a fixed increment of ${inc} became max ${limit.max} calls (max ÷ increment)`);
      }
      if (onDeny) limit.on_deny = onDeny;
      out.limits.push(limit);
    } else if (path.startsWith('args.') || path === 'args') {
      argConditions.push({ path, op: c.op, value: c.value });
    } else {
      notes.push(`${cAt}: path ${JSON.stringify(c.path)} is neither args.* nor state.*; dropped`);
    }
  });
  if (argConditions.length > 0) out.require.push({ conditions: argConditions, ...(onDeny ? { on_deny: onDeny } : name ? { on_deny: `Denied by rule "${name}".` } : {}) });
}

export function importInterceptPolicy(text: string): ImportResult {
  const doc: unknown = parse(text);
  if (!isObj(doc)) throw new Error('the file is not a YAML mapping');
  const notes: string[] = [];
  const policy: PolicyInput = { version: '1', default: doc.default === 'deny' ? 'deny' : 'allow', tools: {} };
  if (doc.version !== undefined && String(doc.version) !== '1') notes.push(`/version: Intercept version ${JSON.stringify(doc.version)} is not "1"; converted as version 1`);
  if (typeof doc.description === 'string') policy.description = doc.description;
  if (Array.isArray(doc.hide)) policy.hide = doc.hide.filter((h): h is string => typeof h === 'string' && h !== '');
  for (const key of Object.keys(doc)) {
    if (!['version', 'description', 'default', 'hide', 'tools'].includes(key)) notes.push(`/${key}: field "${key}" has no toolgate equivalent and was dropped`);
  }
  const tools = isObj(doc.tools) ? doc.tools : {};
  for (const [tool, value] of Object.entries(tools)) {
    const section: Section = { require: [], deny_if: [], limits: [] };
    const rules = isObj(value) && Array.isArray(value.rules) ? value.rules : [];
    rules.forEach((rule, i) => {
      if (isObj(rule)) convertRule(tool, rule, ['tools', tool, 'rules', i], section, notes);
    });
    if (tool === '*') {
      policy.all_tools = {};
      if (section.require.length) policy.all_tools.require = section.require as never;
      if (section.deny_if.length) policy.all_tools.deny_if = section.deny_if as never;
      if (section.limits.length) policy.all_tools.limits = section.limits as never;
      continue;
    }
    const entry: Obj = {};
    if (section.action) entry.action = section.action;
    if (section.on_deny) entry.on_deny = section.on_deny;
    if (section.require.length) entry.require = section.require;
    if (section.limits.length) entry.limits = section.limits;
    policy.tools![tool] = entry as never;
  }
  return { policy, notes };
}
