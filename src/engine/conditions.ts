import { compileRegex, plainNumber } from '../policy/check.js';
import { canonicalJson } from '../policy/load.js';
import { parsePath, type ContextPath, type Step } from '../policy/paths.js';
import type { Condition } from '../policy/schema.js';
import { isPrivateAddress } from './private-address.js';

/** What a decision may look at: the call and who makes it. The engine knows nothing else. */
export interface CallContext {
  tool: string;
  args: Record<string, unknown>;
  /**
   * Who calls. `id` is what `scope: grant` limits count under (labels are for people and need not
   * be unique: an OAuth client or an identity provider chooses them); without one (toolgate run,
   * policy test), the label is the identity.
   */
  grant: { id?: string; label: string; tags: readonly string[] };
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
 * What a numeric comparison on a value that is not a plain number gives (see `plainNumber`):
 * neither true nor false. A lenient server may read "99_999", "９９９９９" or "٩٩٩٩٩" as 99999, so
 * the caller fails closed: a deny_if or approve_if item matches, a require item fails.
 */
const UNKNOWN = undefined;
type Outcome = boolean | typeof UNKNOWN;

/** A number compared with `n`: plain numbers compare as numbers ("999" > 100), anything else is UNKNOWN. */
function compareNumber(a: unknown, cmp: (x: number) => boolean): Outcome {
  const x = plainNumber(a);
  return Number.isNaN(x) ? UNKNOWN : cmp(x);
}

function looseEquals(a: unknown, b: unknown): Outcome {
  if (a === b) return true;
  if (typeof b === 'number') return compareNumber(a, (x) => x === b);
  if (typeof a === 'number') return compareNumber(b, (y) => y === a);
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') return canonicalJson(a) === canonicalJson(b);
  return false;
}

/** True when any is true, else UNKNOWN when any is, else false. */
function anyOf<T>(list: readonly T[], test: (x: T) => Outcome): Outcome {
  let unknown = false;
  for (const x of list) {
    const r = test(x);
    if (r === true) return true;
    if (r === UNKNOWN) unknown = true;
  }
  return unknown ? UNKNOWN : false;
}

const not = (r: Outcome): Outcome => (r === UNKNOWN ? UNKNOWN : !r);

const asText = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;

function lengthOf(v: unknown): number {
  if (typeof v === 'string') return [...v].length;
  if (Array.isArray(v)) return v.length;
  if (v !== null && typeof v === 'object') return Object.keys(v).length;
  return NaN;
}

type Test = (actual: unknown) => Outcome;

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
    case 'neq': return (a) => not(looseEquals(a, v));
    case 'in': { const list = v as unknown[]; return (a) => anyOf(list, (x) => looseEquals(a, x)); }
    case 'not_in': { const list = v as unknown[]; return (a) => not(anyOf(list, (x) => looseEquals(a, x))); }
    case 'lt': { const n = plainNumber(v); return (a) => compareNumber(a, (x) => x < n); }
    case 'lte': { const n = plainNumber(v); return (a) => compareNumber(a, (x) => x <= n); }
    case 'gt': { const n = plainNumber(v); return (a) => compareNumber(a, (x) => x > n); }
    case 'gte': { const n = plainNumber(v); return (a) => compareNumber(a, (x) => x >= n); }
    case 'len_lte': { const n = plainNumber(v); return (a) => lengthOf(a) <= n; }
    case 'len_gte': { const n = plainNumber(v); return (a) => lengthOf(a) >= n; }
    case 'regex': {
      const test = regexTest(v as string);
      return (a) => { const s = asText(a); return s !== undefined && test(s); };
    }
    case 'starts_with': { const p = v as string; return (a) => asText(a)?.startsWith(p) ?? false; }
    case 'ends_with': { const p = v as string; return (a) => asText(a)?.endsWith(p) ?? false; }
    case 'contains': return (a) => {
      if (Array.isArray(a)) return anyOf(a, (x) => looseEquals(x, v));
      const s = asText(a);
      const needle = asText(v);
      return s !== undefined && needle !== undefined && s.includes(needle);
    };
    case 'private_address': { const want = v !== false; return (a) => typeof a === 'string' && isPrivateAddress(a) === want; }
    case 'exists': throw new Error('exists is compiled separately');
  }
}

/**
 * Compiles one condition into a predicate. A missing path makes every operator but `exists` false;
 * an undecidable numeric comparison gives `unknownAs` (true where matching denies, false where
 * holding allows), and so does a `[*]` path when any element's is undecidable.
 */
export function compileCondition(c: Condition, unknownAs: boolean): Predicate {
  const path = parsePath(c.path);
  if (typeof path === 'string') throw new Error(path);
  if (path.root === 'context') {
    const name = path.name;
    if (c.op === 'exists') { const want = c.value !== false; return (ctx) => (contextValue(name, ctx) !== MISSING) === want; }
    const test = compileOp(c);
    return (ctx) => { const a = contextValue(name, ctx); return a !== MISSING && (test(a) ?? unknownAs); };
  }
  const steps = path.steps;
  const fanOut = steps.some((s) => s.kind === 'any');
  if (c.op === 'exists') {
    const want = c.value !== false;
    if (!fanOut) return (ctx) => (getPath(ctx.args, steps) !== MISSING) === want;
    return (ctx) => { const out: unknown[] = []; resolveAll(ctx.args, steps, 0, out); return (out.length > 0) === want; };
  }
  const test = compileOp(c);
  if (!fanOut) return (ctx) => { const a = getPath(ctx.args, steps); return a !== MISSING && (test(a) ?? unknownAs); };
  return (ctx) => {
    const out: unknown[] = [];
    resolveAll(ctx.args, steps, 0, out);
    const results = out.map(test);
    return results.includes(UNKNOWN) ? unknownAs : results.includes(true);
  };
}

/**
 * Compiles one condition into a test of a value the caller found (a result's text, size, …):
 * `MISSING` for none. Same operators and rules as compileCondition.
 */
export function compileValueCondition(c: Condition, unknownAs: boolean): (value: unknown) => boolean {
  if (c.op === 'exists') { const want = c.value !== false; return (a) => (a !== MISSING) === want; }
  const test = compileOp(c);
  return (a) => a !== MISSING && (test(a) ?? unknownAs);
}

/** All conditions must hold; an empty list always holds. `unknownAs`: see compileCondition. */
export function compileAll(conditions: readonly Condition[], unknownAs: boolean): Predicate {
  const preds = conditions.map((c) => compileCondition(c, unknownAs));
  if (preds.length === 0) return () => true;
  if (preds.length === 1) return preds[0];
  return (ctx) => { for (const p of preds) if (!p(ctx)) return false; return true; };
}

export { MISSING };
