import { pointerOf } from '../policy/check.js';
import { parseIncrementPath, type Step } from '../policy/paths.js';
import type { ApproveRule, Limit, Policy, Rule, ToolEntry } from '../policy/schema.js';
import { compileAll, type Predicate } from './conditions.js';
import { globToRegExp, isGlob } from './glob.js';
import { skeleton } from './names.js';
import { CounterKeys, windowSeconds } from './windows.js';
import { compileFlows, type CompiledFlowRule } from '../flows/rule.js';

export interface CompiledRule {
  pointer: string;
  test: Predicate;
  message?: string;
}

export interface CompiledLimit {
  pointer: string;
  counter: string;
  seconds: number;
  max: number;
  scope: Limit['scope'];
  increment?: { path: string; steps: Step[] };
  message?: string;
  /** The limit's counter keys, per scope and window (made once, not per call). */
  keys: CounterKeys;
}

export interface CompiledEntry {
  key: string;
  /** `/tools/<key>`, or `(default)` for the stand-in entry of unlisted tools under default allow. */
  pointer: string;
  action: ToolEntry['action'];
  onDeny?: string;
  require: CompiledRule[];
  denyIf: CompiledRule[];
  approveIf: CompiledRule[];
  approval: ApprovalSettings;
  limits: CompiledLimit[];
  /** The flow roles the policy gives the tool (`flow:`), replacing the classifier's; absent: the classifier decides. */
  flow?: readonly string[];
  /** The entry's checks followed by all_tools', joined once at compile time. */
  checks: { require: CompiledRule[]; denyIf: CompiledRule[]; limits: CompiledLimit[] };
}

export interface Lookup {
  /** Pointer of the first `hide` pattern that matches the name or its skeleton, or null. */
  hidden: string | null;
  /** The tool's entry; under default allow an unlisted tool gets the `(default)` stand-in; null means default deny. */
  entry: CompiledEntry | null;
  /** The name's skeleton. */
  skeleton: string;
  /**
   * The entries the skeleton matches among the policy's skeletons (case-, width-, look-alike- and
   * invisible-insensitive, exact before glob) other than `entry`: what a lenient server could take
   * the name for. null stands for no entry under default deny.
   */
  similar: readonly (CompiledEntry | null)[];
}

interface Glob<T> { re: RegExp; value: T }

/** Patterns in precedence order; those with the same skeleton are one group, so none of them wins over another by case alone. */
function skeletonGlobs<T>(patterns: readonly { pattern: string; value: T }[]): Glob<T[]>[] {
  const groups = new Map<string, T[]>();
  for (const { pattern, value } of patterns) {
    const sk = skeleton(pattern);
    const group = groups.get(sk);
    if (group) group.push(value);
    else groups.set(sk, [value]);
  }
  return [...groups].map(([sk, values]) => ({ re: globToRegExp(sk), value: values }));
}

const DURATION_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
export function durationMs(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text);
  if (!m) throw new Error(`invalid duration "${text}"`);
  return Number(m[1]) * DURATION_MS[m[2]];
}

/** How a held call is approved (SPEC section 4). */
export interface ApprovalSettings {
  timeoutMs: number;
  via: string[];
  mode: 'hold' | 'retry';
  validForMs: number;
  /** Pending approvals one grant may have at once (`approval.max_pending`). */
  maxPending: number;
}

const DEFAULT_VIA = ['dashboard', 'cli', 'api', 'webhook'];
export const DEFAULT_MAX_PENDING = 20;

export function approvalSettings(a: ToolEntry['approval']): ApprovalSettings {
  return { timeoutMs: durationMs(a?.timeout ?? '5m'), via: a?.via ?? DEFAULT_VIA, mode: a?.mode ?? 'hold', validForMs: durationMs(a?.valid_for ?? '10m'), maxPending: a?.max_pending ?? DEFAULT_MAX_PENDING };
}

/** `matchUndecided`: what a numeric comparison on a value that is not a plain number counts as (fail closed). */
function rules(list: readonly Rule[], at: string[], matchUndecided: boolean): CompiledRule[] {
  return list.map((r, i) => ({ pointer: pointerOf([...at, i]), test: compileAll(r.conditions, matchUndecided), message: r.on_deny }));
}

function approveRules(list: readonly ApproveRule[], at: string[]): CompiledRule[] {
  return list.map((r, i) => ({ pointer: pointerOf([...at, i]), test: compileAll(r.conditions, true), message: r.reason }));
}

function limits(list: readonly Limit[], at: string[]): CompiledLimit[] {
  return list.map((l, i) => {
    let increment: CompiledLimit['increment'];
    if (l.increment_from !== undefined) {
      const steps = parseIncrementPath(l.increment_from);
      if (typeof steps === 'string') throw new Error(steps);
      increment = { path: l.increment_from, steps };
    }
    const seconds = windowSeconds(l.window);
    return {
      pointer: pointerOf([...at, i]),
      counter: l.counter,
      seconds,
      max: l.max,
      scope: l.scope,
      increment,
      message: l.on_deny,
      keys: new CounterKeys(l.counter, seconds, l.scope),
    };
  });
}

type AllTools = CompiledPolicy['allTools'];

function withAllTools(entry: Omit<CompiledEntry, 'checks'>, all: AllTools): CompiledEntry {
  return {
    ...entry,
    checks: { require: [...entry.require, ...all.require], denyIf: [...entry.denyIf, ...all.denyIf], limits: [...entry.limits, ...all.limits] },
  };
}

function compileEntry(key: string, e: ToolEntry): Omit<CompiledEntry, 'checks'> {
  const at = ['tools', key];
  return {
    key,
    pointer: pointerOf(at),
    action: e.action,
    onDeny: e.on_deny,
    require: rules(e.require, [...at, 'require'], false),
    denyIf: rules(e.deny_if, [...at, 'deny_if'], true),
    approveIf: approveRules(e.approve_if, [...at, 'approve_if']),
    approval: approvalSettings(e.approval),
    limits: limits(e.limits, [...at, 'limits']),
    ...(e.flow ? { flow: e.flow } : {}),
  };
}

const LOOKUP_CACHE_MAX = 10_000;

/**
 * A policy compiled once per load: exact names in a map, globs as precompiled regexes ordered by
 * precedence (longer pattern first), conditions as closures. Name lookups are memoised.
 */
export class CompiledPolicy {
  readonly default: Policy['default'];
  readonly mode: Policy['mode'];
  readonly pinsOnChange: 'warn' | 'block';
  /** Data-flow rules (SPEC 11), in policy order. */
  readonly flows: CompiledFlowRule[];
  readonly allTools: { require: CompiledRule[]; denyIf: CompiledRule[]; limits: CompiledLimit[] };
  /** What an unlisted tool gets under default allow: all_tools' checks only. */
  private readonly defaultEntry: CompiledEntry | null;
  private readonly exact = new Map<string, CompiledEntry>();
  private readonly globs: { re: RegExp; entry: CompiledEntry }[] = [];
  private readonly hide: { re: RegExp; pointer: string }[];
  /** The same tools and hide patterns by skeleton: plain names, globs and hide patterns alike match whatever the case. */
  private readonly skeletonExact = new Map<string, CompiledEntry[]>();
  private readonly skeletonGlobs: Glob<CompiledEntry[]>[];
  private readonly skeletonHide: Glob<string[]>[];
  private readonly cache = new Map<string, Lookup>();

  /**
   * Set when no policy file was given: `recommended`, toolgate's recommended policy for the tools
   * the server listed; `pending`, the deny-all that stands in until the server's tools are known.
   * Denials then say how to write a policy instead of "add it under tools in the policy".
   */
  readonly origin?: 'recommended' | 'pending';

  constructor(readonly policy: Policy, readonly hash: string, origin?: 'recommended' | 'pending') {
    this.origin = origin;
    this.default = policy.default;
    this.mode = policy.mode;
    this.pinsOnChange = policy.pins?.on_change ?? 'warn';
    this.flows = compileFlows(policy.flows ?? [], durationMs);
    const all = policy.all_tools;
    this.allTools = {
      require: rules(all?.require ?? [], ['all_tools', 'require'], false),
      denyIf: rules(all?.deny_if ?? [], ['all_tools', 'deny_if'], true),
      limits: limits(all?.limits ?? [], ['all_tools', 'limits']),
    };
    const globbed: { key: string; entry: CompiledEntry; order: number }[] = [];
    Object.entries(policy.tools).forEach(([key, entry], order) => {
      const compiled = withAllTools(compileEntry(key, entry), this.allTools);
      if (isGlob(key)) globbed.push({ key, entry: compiled, order });
      else {
        this.exact.set(key, compiled);
        const sk = skeleton(key);
        this.skeletonExact.set(sk, [...(this.skeletonExact.get(sk) ?? []), compiled]);
      }
    });
    globbed.sort((a, b) => b.key.length - a.key.length || a.order - b.order);
    this.globs = globbed.map((g) => ({ re: globToRegExp(g.key), entry: g.entry }));
    this.skeletonGlobs = skeletonGlobs(globbed.map((g) => ({ pattern: g.key, value: g.entry })));
    this.hide = policy.hide.map((pattern, i) => ({ re: globToRegExp(pattern), pointer: `/hide/${i}` }));
    this.skeletonHide = skeletonGlobs(policy.hide.map((pattern, i) => ({ pattern, value: `/hide/${i}` })));
    this.defaultEntry = policy.default === 'deny' ? null : withAllTools({
      key: '*', pointer: '(default)', action: 'allow', require: [], denyIf: [], approveIf: [],
      approval: approvalSettings(undefined), limits: [],
    }, this.allTools);
  }

  lookup(name: string): Lookup {
    const cached = this.cache.get(name);
    if (cached) return cached;
    const sk = skeleton(name);
    let hidden: string | null = null;
    for (const h of this.hide) if (h.re.test(name)) { hidden = h.pointer; break; }
    if (hidden === null) for (const h of this.skeletonHide) if (h.re.test(sk)) { hidden = h.value[0]; break; }
    let entry = this.exact.get(name) ?? null;
    if (!entry) for (const g of this.globs) if (g.re.test(name)) { entry = g.entry; break; }
    entry ??= this.defaultEntry;
    let similar: (CompiledEntry | null)[] | undefined = this.skeletonExact.get(sk);
    if (!similar) for (const g of this.skeletonGlobs) if (g.re.test(sk)) { similar = g.value; break; }
    similar = (similar ?? [this.defaultEntry]).filter((e) => e !== entry);
    const result: Lookup = { hidden, entry, skeleton: sk, similar };
    if (this.cache.size >= LOOKUP_CACHE_MAX) this.cache.clear();
    this.cache.set(name, result);
    return result;
  }

  /** What the policy does with `name` when its definition is poisoned: its entry's poisoned, else the policy's, else warn. */
  poisonedFor(name: string): 'hide' | 'warn' | 'allow' {
    const { entry } = this.lookup(name);
    const own = entry && Object.hasOwn(this.policy.tools, entry.key) ? this.policy.tools[entry.key].poisoned : undefined;
    return own ?? this.policy.poisoned ?? 'warn';
  }

  isHidden(name: string): boolean {
    return this.lookup(name).hidden !== null;
  }
}
