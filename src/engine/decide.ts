import { KILLED, STATE_LOST, type Charge, type CounterStore, type FlagStore } from '../state/types.js';
import { approvalSettings, type ApprovalSettings, type CompiledEntry, type CompiledLimit, type CompiledPolicy } from './compile.js';
import { plainNumber } from '../policy/check.js';
import { getPath, MISSING, type CallContext } from './conditions.js';
import { judgeFlows, type FlowHint } from '../flows/rule.js';

export type Verdict = 'allow' | 'deny' | 'approve';

export interface Decision {
  verdict: Verdict;
  /** JSON pointer of the rule that decided, or (default), (kill-switch), (state-store). */
  rule: string;
  message?: string;
  retryAfterSeconds: number | null;
  /** False in shadow mode: a deny is logged as shadow_deny and the call forwarded anyway. */
  enforced: boolean;
  /** Counter increments taken for this call; give them back with `settle(decision, false)`. */
  charges: Charge[];
  approval?: ApprovalSettings;
}

/** What the caller knows about the call beyond its context. */
export interface DecideHints {
  /** Names the server advertises that look like the called one. */
  aliases?: readonly string[];
  /** The tool's definition differs from its pin, or it was never pinned on a pinned server. */
  pinChanged?: boolean;
  /**
   * The listed definition of the tool, or of an advertised tool whose name looks like it, has
   * hide-level poisoning findings (src/poison): which tool, and their summary. Denied when the
   * policy says poisoned: hide for either name (the strictest spelling wins, as with aliases).
   */
  poisoned?: { tool: string; findings: string };
  /** A human approved this exact call: step 8 is passed, every other step (limits too) still applies. */
  approved?: boolean;
  /**
   * The call's limits were taken when it was first sent (a retry that continues it, MCP
   * 2026-07-28 input_required): every step still applies, but nothing is reserved again.
   */
  charged?: boolean;
  /**
   * Judged, not charged: every step up to the limits, none taken (input sent to a running task,
   * whose call was charged when it was made).
   */
  uncharged?: boolean;
  /** The tool's flow roles and what its agent touched (src/flows): the policy's `flows` rules apply. */
  flow?: FlowHint;
}

export interface EngineOptions {
  policy: CompiledPolicy;
  counters: CounterStore;
  flags?: FlagStore;
  /** Allow limited calls when the state store fails (default: deny them). */
  failOpen?: boolean;
  /** Force shadow mode whatever the policy says. */
  shadow?: boolean;
}

const NO_CHARGES: Charge[] = [];

export interface Evaluation {
  verdict: Verdict;
  rule: string;
  message?: string;
  entry: CompiledEntry | null;
  approval?: Decision['approval'];
  /** The limits an allowed call takes when it matched more than one entry (else its entry's). */
  limits?: readonly CompiledLimit[];
}

/** The charges an allowed call takes, with what a denial needs to say which limit it hit. */
interface Reservation { charges: Charge[]; limits: readonly CompiledLimit[]; rule: string; enforced: boolean }

function deny(rule: string, message: string, retryAfterSeconds: number | null = null): Decision {
  return { verdict: 'deny', rule, message, retryAfterSeconds, enforced: true, charges: NO_CHARGES };
}

const killSwitchDenial = (): Decision => deny('(kill-switch)', 'The kill switch is on: no tool calls are forwarded until an operator turns it off.');

const RANK: Record<Verdict, number> = { allow: 0, approve: 1, deny: 2 };

function describeWindow(seconds: number): string {
  return seconds === 1 ? 'second' : seconds === 60 ? 'minute' : seconds === 3600 ? 'hour' : seconds === 86400 ? 'day' : `${seconds} s`;
}

/**
 * The decision engine: SPEC section 2's decision order over a compiled policy. It knows no
 * transport; callers give it a CallContext and forward, or not, on its answer.
 */
export class Engine {
  private policy: CompiledPolicy;
  private readonly counters: CounterStore;
  private readonly flags?: FlagStore;
  private readonly failOpen: boolean;
  private readonly forceShadow: boolean;

  constructor(opts: EngineOptions) {
    this.policy = opts.policy;
    this.counters = opts.counters;
    this.flags = opts.flags;
    this.failOpen = opts.failOpen ?? false;
    this.forceShadow = opts.shadow ?? false;
  }

  get current(): CompiledPolicy {
    return this.policy;
  }

  /** Swaps the policy (hot reload). Counters live in the store, so they carry over. */
  setPolicy(policy: CompiledPolicy): void {
    this.policy = policy;
  }

  get shadow(): boolean {
    return this.forceShadow || this.policy.mode === 'shadow';
  }

  /**
   * Steps 3–8 of the decision order, without side effects. The name is judged as itself, as its
   * skeleton against the policy's skeletons (so case, width, invisible and look-alike characters
   * change nothing) and as each `alias` (advertised tool names with the same skeleton); the
   * strictest answer wins. An allowed call counts against the limits of every entry it matched.
   */
  evaluate(ctx: CallContext, aliases: readonly string[] = []): Evaluation {
    const found = this.policy.lookup(ctx.tool);
    let best = this.judge(ctx, found.hidden, found.entry);
    if (found.similar.length === 0 && aliases.length === 0) return best;
    const skCtx = { ...ctx, tool: found.skeleton };
    const allowed = best.entry ? [best.entry] : [];
    const consider = (r: Evaluation) => {
      if (RANK[r.verdict] > RANK[best.verdict]) best = r;
      else if (r.verdict === 'allow' && r.entry && !allowed.includes(r.entry)) allowed.push(r.entry);
    };
    for (const entry of found.similar) consider(this.judge(skCtx, null, entry));
    for (const alias of aliases) {
      if (alias === ctx.tool) continue;
      const other = this.policy.lookup(alias);
      consider(this.judge({ ...ctx, tool: alias }, other.hidden, other.entry));
    }
    if (best.verdict !== 'allow' || allowed.length < 2) return best;
    const limits = allowed.flatMap((e) => e.checks.limits).filter((l, i, all) => all.indexOf(l) === i);
    return { ...best, limits };
  }

  /**
   * Whether tools/list may show a tool: not hidden (in any spelling), and — when enforcing — a
   * call to it could be forwarded at all: it has an entry (or default allow) whose action is not
   * deny, and no entry it matches by skeleton denies it outright.
   */
  listable(name: string): boolean {
    const { hidden, entry, similar } = this.policy.lookup(name);
    if (hidden !== null) return false;
    if (this.shadow) return true;
    if (entry === null || entry.action === 'deny') return false;
    return !similar.some((e) => e?.action === 'deny');
  }

  /** Why a tool without an entry is denied, and what to do: it depends on whether a policy file was given. */
  private defaultDenial(tool: string): string {
    const write = 'To decide for yourself, write the recommended policy to a file (toolgate policy recommend -- SERVER COMMAND… > policy.json), edit it, and use it with toolgate run -p policy.json (or policy: in the gateway configuration).';
    if (this.policy.origin === 'pending') return `No policy file was given, and toolgate has not been able to list this server's tools yet, so its recommended policy denies "${tool}" for now. ${write}`;
    if (this.policy.origin === 'recommended') return `No policy file was given, and toolgate's recommended policy for this server has no rule for "${tool}", so it is denied. ${write}`;
    return `The policy has no entry for "${tool}" and denies what it does not list (default: deny). To allow it, add "${tool}": {} under "tools" in the policy.`;
  }

  private judge(ctx: CallContext, hidden: string | null, entry: CompiledEntry | null): Evaluation {
    if (hidden) return { verdict: 'deny', rule: hidden, message: `Tool "${ctx.tool}" is not available.`, entry: null };
    if (!entry) return { verdict: 'deny', rule: '(default)', message: this.defaultDenial(ctx.tool), entry: null };
    if (entry.action === 'deny') {
      return { verdict: 'deny', rule: `${entry.pointer}/action`, message: entry.onDeny ?? `Tool "${ctx.tool}" is blocked by policy.`, entry };
    }
    for (const r of entry.checks.require) {
      if (!r.test(ctx)) return { verdict: 'deny', rule: r.pointer, message: r.message ?? `This call to "${ctx.tool}" does not meet a required condition (${r.pointer}).`, entry };
    }
    for (const r of entry.checks.denyIf) {
      if (r.test(ctx)) return { verdict: 'deny', rule: r.pointer, message: r.message ?? `This call to "${ctx.tool}" is denied by policy (${r.pointer}).`, entry };
    }
    if (entry.action === 'approve') return { verdict: 'approve', rule: `${entry.pointer}/action`, message: `"${ctx.tool}" needs human approval.`, entry, approval: entry.approval };
    for (const r of entry.approveIf) {
      if (r.test(ctx)) return { verdict: 'approve', rule: r.pointer, message: r.message ?? `This call to "${ctx.tool}" needs human approval.`, entry, approval: entry.approval };
    }
    return { verdict: 'allow', rule: entry.pointer, entry };
  }

  private limitsOf(e: Evaluation): readonly CompiledLimit[] {
    return e.limits ?? (e.entry ? e.entry.checks.limits : this.policy.allTools.limits);
  }

  /** The counter increments a call needs, or a denial when an increment argument is not a plain number. */
  charges(list: readonly CompiledLimit[], ctx: CallContext): Charge[] | Decision {
    if (list.length === 0) return NO_CHARGES;
    const out: Charge[] = new Array(list.length);
    for (let i = 0; i < list.length; i++) {
      const l = list[i];
      let amount = 1;
      if (l.increment) {
        const raw = getPath(ctx.args, l.increment.steps);
        amount = raw === MISSING ? NaN : plainNumber(raw);
        if (!(amount >= 0)) {
          return deny(l.pointer, `This call needs ${l.increment.path} as a non-negative number in plain decimal digits (it counts against the "${l.counter}" limit).`);
        }
      }
      const slot = l.keys.slot(ctx.server.name, ctx.grant.id ?? ctx.grant.label, ctx.session.id, ctx.now);
      out[i] = { key: slot.key, amount, max: l.max, expiresAt: slot.start + slot.window.ms, window: slot.window, local: slot.local };
    }
    return out;
  }

  /**
   * The whole decision order, including the kill switch and the atomic reservation of every
   * limit. Synchronous when the stores are (memory, SQLite), so the hot path has no await. When
   * the counters read the kill switch themselves (one state store), a limited call reads it in
   * its reservation; the policy steps before it have no side effects, so they may run first.
   */
  decide(ctx: CallContext, hints: DecideHints = {}): Decision | Promise<Decision> {
    const aliases = hints.aliases ?? [];
    if (!this.flags) return this.afterKillSwitch(ctx, aliases, null, hints);
    if (this.counters.flags === this.flags && this.counters.reserveUnlessKilled) {
      const plan = this.plan(ctx, aliases, hints);
      if (!('verdict' in plan)) return this.take(plan, ctx, true);
      return this.withKillSwitch(ctx, (killed) => (killed !== null ? killSwitchDenial() : plan));
    }
    return this.withKillSwitch(ctx, (killed) => this.afterKillSwitch(ctx, aliases, killed, hints));
  }

  private withKillSwitch(ctx: CallContext, then: (killed: string | null) => Decision | Promise<Decision>): Decision | Promise<Decision> {
    let killed: ReturnType<FlagStore['killedFor']>;
    try {
      killed = this.flags!.killedFor(ctx.server.name);
    } catch {
      killed = this.failOpen ? null : 'unknown';
    }
    if (killed instanceof Promise) return killed.then(then, () => then(this.failOpen ? null : 'unknown'));
    return then(killed);
  }

  private afterKillSwitch(ctx: CallContext, aliases: readonly string[], killed: string | null, hints: DecideHints): Decision | Promise<Decision> {
    if (killed !== null) return killSwitchDenial();
    const plan = this.plan(ctx, aliases, hints);
    return 'verdict' in plan ? plan : this.take(plan, ctx, false);
  }

  /** Steps after the kill switch up to the reservation: a decision, or the charges an allowed call still has to take. */
  private plan(ctx: CallContext, aliases: readonly string[], hints: DecideHints): Decision | Reservation {
    if (hints.pinChanged && this.policy.pinsOnChange === 'block') {
      return deny('(pin)', `The definition of "${ctx.tool}" changed since it was pinned (or it is new); an operator must review and accept it with toolgate pin --accept.`);
    }
    if (hints.poisoned && (this.policy.poisonedFor(ctx.tool) === 'hide' || this.policy.poisonedFor(hints.poisoned.tool) === 'hide')) {
      return deny('(poisoned)', `"${ctx.tool}" is hidden: its definition carries text aimed at the model rather than the user (${hints.poisoned.findings}). An operator can review it with toolgate record, or set poisoned: warn for it in the policy.`);
    }
    const enforced = !this.shadow;
    let e = this.evaluate(ctx, aliases);
    // Step 7b (SPEC 11): a data-flow rule, after the entry's deny steps and with its approval step; deny beats approve.
    const flow = e.verdict !== 'deny' && hints.flow && this.policy.flows.length ? judgeFlows(this.policy.flows, ctx.tool, hints.flow, ctx.now) : null;
    if (flow && (flow.verdict === 'deny' || !hints.approved)) {
      const rule = this.policy.flows[flow.index];
      e = { ...e, verdict: flow.verdict, rule: flow.rule, message: flow.message, approval: rule.approval ? approvalSettings(rule.approval) : e.entry?.approval ?? approvalSettings(undefined) };
    }
    if (e.verdict !== 'allow' && !(e.verdict === 'approve' && hints.approved)) {
      return { verdict: e.verdict, rule: e.rule, message: e.message, retryAfterSeconds: null, enforced, charges: NO_CHARGES, approval: e.approval };
    }
    if (hints.charged) return { verdict: 'allow', rule: e.rule, retryAfterSeconds: null, enforced, charges: NO_CHARGES };
    if (hints.uncharged) return { verdict: e.verdict, rule: e.rule, message: e.message, retryAfterSeconds: null, enforced, charges: NO_CHARGES };
    const limits = this.limitsOf(e);
    const charges = this.charges(limits, ctx);
    if (!Array.isArray(charges)) return { ...charges, enforced };
    if (charges.length === 0) return { verdict: 'allow', rule: e.rule, retryAfterSeconds: null, enforced, charges };
    return { charges, limits, rule: e.rule, enforced };
  }

  private take(r: Reservation, ctx: CallContext, unlessKilled: boolean): Decision | Promise<Decision> {
    let failed: number | Promise<number>;
    try {
      failed = unlessKilled ? this.counters.reserveUnlessKilled!(ctx.server.name, r.charges, ctx.now) : this.counters.reserve(r.charges, ctx.now);
    } catch (err) {
      return this.storeFailed(err as Error, r.rule, r.enforced);
    }
    if (failed instanceof Promise) {
      return failed.then((f) => this.reserved(f, r, ctx), (err: Error) => this.storeFailed(err, r.rule, r.enforced));
    }
    return this.reserved(failed, r, ctx);
  }

  /** The audit row's message says which way a store failure went: fail closed (denied) or fail_open (forwarded uncounted). */
  private storeFailed(err: Error, rule: string, enforced: boolean): Decision {
    if (this.failOpen) return { verdict: 'allow', rule, message: `fail_open: limits not checked (state store error: ${err.message}); forwarded uncounted.`, retryAfterSeconds: null, enforced, charges: NO_CHARGES };
    return { ...deny('(state-store)', `Limits cannot be checked right now (state store error: ${err.message}); the call was not forwarded (fail closed).`), enforced };
  }

  private reserved(failed: number, { charges, limits, rule, enforced }: Reservation, ctx: CallContext): Decision {
    if (failed === -1) return { verdict: 'allow', rule, retryAfterSeconds: null, enforced, charges };
    if (failed === KILLED) return killSwitchDenial();
    // Not a store that is down (fail_open does not apply): one that answers with counters gone, so counting from zero would hand limits back.
    if (failed === STATE_LOST) return { ...deny('(state-lost)', 'Limits cannot be checked: the shared state store lost its counters (flushed or evicted), so limited calls are refused until an operator acknowledges it with toolgate state reset-ack. The call was not forwarded.'), enforced };
    const limit = limits[failed];
    const retry = Math.max(1, Math.ceil((charges[failed].expiresAt - ctx.now) / 1000));
    const what = limit.increment ? `a total of ${limit.max}` : `${limit.max} call${limit.max === 1 ? '' : 's'}`;
    const message = limit.message ?? `Limit reached: ${what} per ${describeWindow(limit.seconds)} ("${limit.counter}", per ${limit.scope}). Try again in ${retry} s.`;
    return { verdict: 'deny', rule: limit.pointer, message, retryAfterSeconds: retry, enforced, charges: NO_CHARGES };
  }

  /**
   * Commits (ok) or rolls back (not ok) the reservation a decision took. A commit changes nothing
   * (the units were taken at reservation); a rollback gives them back.
   */
  settle(decision: Decision, ok: boolean): Promise<void> | undefined {
    if (ok || decision.charges.length === 0) return undefined;
    const charges = decision.charges;
    decision.charges = NO_CHARGES;
    return this.counters.release(charges);
  }
}
