import { compileRegex } from '../policy/check.js';
import { canonicalJson } from '../policy/load.js';
import { parsePath, type ContextPath, type Step } from '../policy/paths.js';
import type { Condition } from '../policy/schema.js';
import { isPrivateAddress } from './private-address.js';

/** What a decision may look at: the call and who makes it. The engine knows nothing else. */
export interface CallContext {
  tool: string;
  args: Record<string, unknown>;
  grant: { label: string; tags: readonly string[] };
  session: { id: string; client?: string };
  server: { name: string };
  /** Milliseconds since the epoch. */
  now: number;
}

export type Predicate = (ctx: CallContext) => boolean;

const MISSING: unique symbol = Symbol('missing');
type Value = unknown | typeof MISSING;

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

function contextValue(name: ContextPath, ctx: CallContext): Value {
  switch (name) {
    case 'tool.name': return ctx.tool;
    case 'grant.label': return ctx.grant.label;
    case 'grant.tags': return ctx.grant.tags;
    case 'session.id': return ctx.session.id;
    case 'session.client': return ctx.session.client ?? MISSING;
    case 'server.name': return ctx.server.name;
    case 'time.hour_utc': return new Date(ctx.now).getUTCHours();
    case 'time.weekday': return WEEKDAYS[new Date(ctx.now).getUTCDay()];
  }
}

/** Own properties only: `__proto__` or `constructor` in arguments are plain keys, never the prototype. */
function child(value: unknown, step: Step): Value {
  if (step.kind === 'key') {
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.hasOwn(value, step.key)) {
      return (value as Record<string, unknown>)[step.key];
    }
    return MISSING;
  }
  if (step.kind === 'index' && Array.isArray(value) && step.index < value.length) return value[step.index];
  return MISSING;
}

/** Resolves steps; `[*]` fans out, so the result is every value the path reaches. */
function resolveAll(value: unknown, steps: readonly Step[], from: number, out: unknown[]): void {
  let current: Value = value;
  for (let i = from; i < steps.length; i++) {
    const step = steps[i];
    if (step.kind === 'any') {
      if (Array.isArray(current)) for (const el of current) resolveAll(el, steps, i + 1, out);
      return;
    }
    current = child(current, step);
    if (current === MISSING) return;
  }
  out.push(current);
}

export function getPath(value: unknown, steps: readonly Step[]): Value {
  let current: Value = value;
  for (const step of steps) {
    current = child(current, step);
    if (current === MISSING) return MISSING;
  }
  return current;
}

/**
 * Numbers and numeric strings compare as numbers because servers commonly coerce them: "999" is a
 * number to a lenient server, so it is one here. A string with a numeric prefix ("500abc") is read
 * as that prefix, the way parseFloat-style coercion would.
 */
export function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return NaN;
  const s = v.trim();
  if (s === '') return NaN;
  const n = Number(s);
  if (!Number.isNaN(n)) return n;
  return parseFloat(s);
}

function looseEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'number' || typeof b === 'number') {
    const x = toNumber(a);
    const y = toNumber(b);
    return !Number.isNaN(x) && x === y;
  }
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') return canonicalJson(a) === canonicalJson(b);
  return false;
}

const asText = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

function lengthOf(v: unknown): number {
  if (typeof v === 'string') return [...v].length;
  if (Array.isArray(v)) return v.length;
  if (v !== null && typeof v === 'object') return Object.keys(v).length;
  return NaN;
}

type Test = (actual: unknown) => boolean;

const META = /[\\.*+?()[\]{}|^$]/;

/**
 * A regex as a test. Plain literals, optionally anchored (`^feat/`, `DROP TABLE`, `\.pem$`, with
 * `(?i)` for any case), become string operations; everything else runs on RE2, which is linear on
 * any input. Both are safe; the first is just cheaper.
 */
export function regexTest(source: string): (s: string) => boolean {
  const insensitive = source.startsWith('(?i)');
  let body = insensitive ? source.slice(4) : source;
  const start = body.startsWith('^');
  const end = body.endsWith('$') && !body.endsWith('\\$');
  body = body.slice(start ? 1 : 0, end ? -1 : undefined).replace(/\\([^\w\s])/g, '$1');
  const literal = !META.test(source.slice(insensitive ? 4 : 0).slice(start ? 1 : 0, end ? -1 : undefined).replace(/\\[^\w\s]/g, ''));
  if (literal) {
    const needle = insensitive ? body.toLowerCase() : body;
    const fold = insensitive ? (s: string) => s.toLowerCase() : (s: string) => s;
    if (start && end) return (s) => fold(s) === needle;
    if (start) return (s) => fold(s).startsWith(needle);
    if (end) return (s) => fold(s).endsWith(needle);
    return (s) => fold(s).includes(needle);
  }
  const re = compileRegex(source);
  return (s) => re.matcher(s).find();
}

function compileOp(c: Condition): Test {
  const v = c.value;
  switch (c.op) {
    case 'eq': return (a) => looseEquals(a, v);
    case 'neq': return (a) => !looseEquals(a, v);
    case 'in': { const list = v as unknown[]; return (a) => list.some((x) => looseEquals(a, x)); }
    case 'not_in': { const list = v as unknown[]; return (a) => !list.some((x) => looseEquals(a, x)); }
    case 'lt': { const n = toNumber(v); return (a) => toNumber(a) < n; }
    case 'lte': { const n = toNumber(v); return (a) => toNumber(a) <= n; }
    case 'gt': { const n = toNumber(v); return (a) => toNumber(a) > n; }
    case 'gte': { const n = toNumber(v); return (a) => toNumber(a) >= n; }
    case 'len_lte': { const n = toNumber(v); return (a) => lengthOf(a) <= n; }
    case 'len_gte': { const n = toNumber(v); return (a) => lengthOf(a) >= n; }
    case 'regex': {
      const test = regexTest(v as string);
      return (a) => { const s = asText(a); return s !== undefined && test(s); };
    }
    case 'starts_with': { const p = v as string; return (a) => asText(a)?.startsWith(p) ?? false; }
    case 'ends_with': { const p = v as string; return (a) => asText(a)?.endsWith(p) ?? false; }
    case 'contains': return (a) => {
      if (Array.isArray(a)) return a.some((x) => looseEquals(x, v));
      const s = asText(a);
      const needle = asText(v);
      return s !== undefined && needle !== undefined && s.includes(needle);
    };
    case 'private_address': { const want = v !== false; return (a) => typeof a === 'string' && isPrivateAddress(a) === want; }
    case 'exists': throw new Error('exists is compiled separately');
  }
}

/** Compiles one condition into a predicate. A missing path makes every operator but `exists` false. */
export function compileCondition(c: Condition): Predicate {
  const path = parsePath(c.path);
  if (typeof path === 'string') throw new Error(path);
  if (path.root === 'context') {
    const name = path.name;
    if (c.op === 'exists') { const want = c.value !== false; return (ctx) => (contextValue(name, ctx) !== MISSING) === want; }
    const test = compileOp(c);
    return (ctx) => { const a = contextValue(name, ctx); return a !== MISSING && test(a); };
  }
  const steps = path.steps;
  const fanOut = steps.some((s) => s.kind === 'any');
  if (c.op === 'exists') {
    const want = c.value !== false;
    if (!fanOut) return (ctx) => (getPath(ctx.args, steps) !== MISSING) === want;
    return (ctx) => { const out: unknown[] = []; resolveAll(ctx.args, steps, 0, out); return (out.length > 0) === want; };
  }
  const test = compileOp(c);
  if (!fanOut) return (ctx) => { const a = getPath(ctx.args, steps); return a !== MISSING && test(a); };
  return (ctx) => { const out: unknown[] = []; resolveAll(ctx.args, steps, 0, out); return out.some(test); };
}

/** All conditions must hold; an empty list always holds. */
export function compileAll(conditions: readonly Condition[]): Predicate {
  const preds = conditions.map(compileCondition);
  if (preds.length === 0) return () => true;
  if (preds.length === 1) return preds[0];
  return (ctx) => { for (const p of preds) if (!p(ctx)) return false; return true; };
}

export { MISSING };
