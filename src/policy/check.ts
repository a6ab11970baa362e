import { RE2JS } from 're2js';
import type { Condition } from './schema.js';
import { parseIncrementPath, parsePath } from './paths.js';

export interface PolicyIssue {
  pointer: string;
  message: string;
  line?: number;
  column?: number;
}

export function pointerOf(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '';
  return '/' + path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

const NUMERIC_OPS = new Set(['lt', 'lte', 'gt', 'gte']);
const STRING_OPS = new Set(['starts_with', 'ends_with', 'regex']);
const LENGTH_OPS = new Set(['len_lte', 'len_gte']);

const DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/**
 * The value as a number when it is a plain one, else NaN: a finite JSON number, or a string of
 * canonical decimal digits (`-?(0|[1-9][0-9]*)(\.[0-9]+)?`), of magnitude up to 2^53 − 1 (beyond,
 * runtimes round differently). Everything else — "99_999", "９９", "٩٩", " 5", "+5", "05", "1e5",
 * "0x10", "Infinity", booleans, null — is not, because some runtime reads it as another number.
 */
export function plainNumber(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && DECIMAL.test(v) ? Number(v) : NaN;
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER ? n : NaN;
}

export function isNumeric(v: unknown): boolean {
  return !Number.isNaN(plainNumber(v));
}

/** Compiles a policy regex with RE2 (linear time: no catastrophic backtracking on any input). */
export function compileRegex(source: string): RE2JS {
  return RE2JS.compile(source);
}

/** The paths a result condition reads (SPEC section 11), besides the call's context paths. */
export const RESULT_PATHS = ['result.text', 'result.structured', 'result.is_error', 'result.bytes'] as const;

function resultPathError(path: string): string | undefined {
  if ((RESULT_PATHS as readonly string[]).includes(path)) return undefined;
  const parsed = parsePath(path);
  if (typeof parsed !== 'string' && parsed.root === 'context') return undefined;
  return `unknown result path "${path}": use ${RESULT_PATHS.join(', ')} or a context path (tool.name, grant.label, server.name, …)`;
}

function argsPathError(path: string): string | undefined {
  const parsed = parsePath(path);
  return typeof parsed === 'string' ? parsed : undefined;
}

function checkCondition(c: Condition, at: (string | number)[], out: PolicyIssue[], pathError = argsPathError): void {
  const problem = pathError(c.path);
  if (problem) out.push({ pointer: pointerOf([...at, 'path']), message: problem });
  const v = c.value;
  const vp = pointerOf([...at, 'value']);
  if (c.op === 'exists' || c.op === 'private_address') {
    if (v !== undefined && typeof v !== 'boolean') out.push({ pointer: vp, message: `${c.op} takes true or false` });
    return;
  }
  if (v === undefined) {
    out.push({ pointer: pointerOf(at), message: `operator "${c.op}" needs a value` });
  } else if (c.op === 'in' || c.op === 'not_in') {
    if (!Array.isArray(v)) out.push({ pointer: vp, message: `operator "${c.op}" takes a list` });
  } else if (NUMERIC_OPS.has(c.op) || LENGTH_OPS.has(c.op)) {
    if (!isNumeric(v)) out.push({ pointer: vp, message: `operator "${c.op}" takes a number` });
  } else if (STRING_OPS.has(c.op)) {
    if (typeof v !== 'string') out.push({ pointer: vp, message: `operator "${c.op}" takes a string` });
    else if (c.op === 'regex') {
      try {
        compileRegex(v);
      } catch (err) {
        out.push({ pointer: vp, message: `invalid regex (RE2 syntax, no backreferences or lookaround): ${(err as Error).message}` });
      }
    }
  }
}

const list = (v: unknown): Record<string, unknown>[] =>
  Array.isArray(v) ? v.map((x) => (x && typeof x === 'object' ? (x as Record<string, unknown>) : {})) : [];

function checkRules(rules: unknown, at: (string | number)[], out: PolicyIssue[], pathError = argsPathError): void {
  list(rules).forEach((rule, i) =>
    list(rule.conditions).forEach((c, j) => {
      if (typeof c.path === 'string' && typeof c.op === 'string') checkCondition(c as Condition, [...at, i, 'conditions', j], out, pathError);
    }),
  );
}

function checkLimits(limits: unknown, at: (string | number)[], out: PolicyIssue[]): void {
  list(limits).forEach((l, i) => {
    if (typeof l.increment_from === 'string') {
      const r = parseIncrementPath(l.increment_from);
      if (typeof r === 'string') out.push({ pointer: pointerOf([...at, i, 'increment_from']), message: r });
    }
  });
}

function checkSection(section: unknown, at: string[], out: PolicyIssue[]): void {
  if (!section || typeof section !== 'object') return;
  const s = section as Record<string, unknown>;
  for (const key of ['require', 'deny_if', 'approve_if']) checkRules(s[key], [...at, key], out);
  checkLimits(s.limits, [...at, 'limits'], out);
  checkResults(s.results, [...at, 'results'], out);
}

function checkResults(results: unknown, at: string[], out: PolicyIssue[]): void {
  if (!results || typeof results !== 'object') return;
  const r = results as Record<string, unknown>;
  for (const key of ['deny_if', 'flag_if']) checkRules(r[key], [...at, key], out, resultPathError);
}

/**
 * Checks what the schema cannot: paths, operator/value pairs, regexes, increment paths. It reads
 * the raw document defensively so that these errors are reported together with schema errors.
 */
export function checkPolicy(raw: unknown): PolicyIssue[] {
  const out: PolicyIssue[] = [];
  if (!raw || typeof raw !== 'object') return out;
  const doc = raw as Record<string, unknown>;
  if (doc.tools && typeof doc.tools === 'object') {
    for (const [name, entry] of Object.entries(doc.tools)) checkSection(entry, ['tools', name], out);
  }
  checkSection(doc.all_tools, ['all_tools'], out);
  checkResults(doc.results, ['results'], out);
  list(doc.flows).forEach((rule, i) => {
    if (rule.then && typeof rule.then === 'object' && Object.keys(rule.then).length === 0) out.push({ pointer: pointerOf(['flows', i, 'then']), message: 'then names no role: e.g. {"egress": "approve"}' });
  });
  return out;
}
