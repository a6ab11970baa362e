import { compileCondition, compileValueCondition, MISSING, type CallContext } from '../engine/conditions.js';
import type { CompiledPolicy } from '../engine/index.js';
import { RESULT_PATHS } from '../policy/check.js';
import type { Condition, ResultsPolicy } from '../policy/schema.js';

/**
 * The result policy in effect for one tool (SPEC section 11): the server's `results`, with each
 * field the tool's entry sets in its place (`redact: []` turns redaction off for the tool).
 * Compiled once per policy and tool name; a policy without `results` anywhere compiles to
 * nothing, so a call's answer then costs one lookup.
 */

/** What a result condition reads: computed once per answer, and only what some condition asks for. */
export interface ResultView {
  text(): string;
  structured(): unknown;
  isError: boolean;
  bytes(): number;
}

export type ResultPredicate = (view: ResultView, ctx: CallContext) => boolean;

export interface ResultRule {
  /** JSON pointer into the policy: `/results/deny_if/0`, `/tools/x/results/flag_if/1`. */
  pointer: string;
  test: ResultPredicate;
  message?: string;
}

export interface ResultPolicy {
  redact: boolean;
  /** Pointer of the `redact` field in effect (for what the agent and the audit read). */
  redactPointer: string;
  maxBytes?: number;
  maxBytesPointer: string;
  onOversize: 'truncate' | 'deny';
  denyIf: ResultRule[];
  flagIf: ResultRule[];
}

type ResultPath = (typeof RESULT_PATHS)[number];

function readPath(path: ResultPath, view: ResultView): unknown {
  switch (path) {
    case 'result.text': return view.text();
    case 'result.structured': { const s = view.structured(); return s === undefined ? MISSING : JSON.stringify(s); }
    case 'result.is_error': return view.isError;
    case 'result.bytes': return view.bytes();
  }
}

function compileRules(list: readonly { conditions: Condition[]; on_deny?: string; reason?: string }[], at: string, matchUndecided: boolean): ResultRule[] {
  return list.map((rule, i) => {
    const preds: ResultPredicate[] = rule.conditions.map((c) => {
      if ((RESULT_PATHS as readonly string[]).includes(c.path)) {
        const test = compileValueCondition(c, matchUndecided);
        const path = c.path as ResultPath;
        return (view) => test(readPath(path, view));
      }
      const pred = compileCondition(c, matchUndecided);
      return (_view, ctx) => pred(ctx);
    });
    return {
      pointer: `${at}/${i}`,
      message: rule.on_deny ?? rule.reason,
      test: (view, ctx) => preds.every((p) => p(view, ctx)),
    };
  });
}

const escapePointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

export function compileResults(server: ResultsPolicy | undefined, tool: ResultsPolicy | undefined, toolPointer: string | undefined): ResultPolicy | null {
  if (!server && !tool) return null;
  const pick = <K extends keyof ResultsPolicy>(key: K): { value: ResultsPolicy[K]; pointer: string } | undefined =>
    tool?.[key] !== undefined ? { value: tool[key], pointer: `${toolPointer}/results/${key}` }
      : server?.[key] !== undefined ? { value: server[key], pointer: `/results/${key}` } : undefined;
  const redact = pick('redact');
  const max = pick('max_bytes');
  const over = pick('on_oversize');
  const denyIf = pick('deny_if');
  const flagIf = pick('flag_if');
  const policy: ResultPolicy = {
    redact: (redact?.value ?? []).includes('secrets'),
    redactPointer: redact?.pointer ?? '/results/redact',
    maxBytes: max?.value,
    maxBytesPointer: max?.pointer ?? '/results/max_bytes',
    onOversize: over?.value ?? 'truncate',
    denyIf: denyIf ? compileRules(denyIf.value ?? [], denyIf.pointer, true) : [],
    flagIf: flagIf ? compileRules(flagIf.value ?? [], flagIf.pointer, true) : [],
  };
  const active = policy.redact || policy.maxBytes !== undefined || policy.denyIf.length > 0 || policy.flagIf.length > 0;
  return active ? policy : null;
}

interface Compiled {
  any: boolean;
  server: ResultPolicy | null;
  tools: Map<string, ResultPolicy | null>;
}

const compiled = new WeakMap<CompiledPolicy, Compiled>();
const TOOLS_CACHED_MAX = 10_000;

function forPolicy(p: CompiledPolicy): Compiled {
  let c = compiled.get(p);
  if (!c) {
    const any = p.policy.results !== undefined || Object.values(p.policy.tools).some((e) => e.results !== undefined);
    c = { any, server: any ? compileResults(p.policy.results, undefined, undefined) : null, tools: new Map() };
    compiled.set(p, c);
  }
  return c;
}

/** Whether `p` has a `results` anywhere: when not, no server message is shaped (the plain path skips the hook). */
export function hasResults(p: CompiledPolicy): boolean {
  return forPolicy(p).any;
}

/** The result policy for a tool's answers under `p`, or null when nothing is to be done to them. */
export function resultPolicyFor(p: CompiledPolicy, tool: string): ResultPolicy | null {
  const c = forPolicy(p);
  if (!c.any) return null;
  const cached = c.tools.get(tool);
  if (cached !== undefined) return cached;
  const entry = p.lookup(tool).entry;
  const own = entry && entry.key !== '*' ? p.policy.tools[entry.key]?.results : undefined;
  const policy = own ? compileResults(p.policy.results, own, `/tools/${escapePointer(entry!.key)}`) : c.server;
  if (c.tools.size >= TOOLS_CACHED_MAX) c.tools.clear();
  c.tools.set(tool, policy);
  return policy;
}

/** The server's result policy, for what no tool answers: resources/read, prompts/get, errors, logging. */
export function serverResultPolicy(p: CompiledPolicy): ResultPolicy | null {
  return forPolicy(p).server;
}
