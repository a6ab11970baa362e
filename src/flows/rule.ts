import type { FlowRule } from '../policy/schema.js';
import type { FlowTouch } from '../state/types.js';

/** A `flows` rule of the policy, compiled once per load. */
export interface CompiledFlowRule {
  pointer: string;
  after: readonly string[];
  then: Readonly<Record<string, 'approve' | 'deny'>>;
  windowMs: number;
  message?: string;
  approval?: FlowRule['approval'];
}

/** What a session knows of a call before it is decided: the tool's roles, and what its agent touched. */
export interface FlowHint {
  roles: readonly string[];
  touched: readonly FlowTouch[];
}

export interface FlowVerdict {
  verdict: 'approve' | 'deny';
  /** `/flows/<i>/then/<role>` */
  rule: string;
  message: string;
  index: number;
  /** The earlier calls that made it so: for each role in `after`, its latest touch within the window. */
  because: FlowTouch[];
}

const NOUN: Record<string, string> = { private: 'private data', untrusted: 'content someone else wrote', egress: 'a way to send data out' };
const WHAT: Record<string, string> = { private: 'reads private data', untrusted: 'takes in content someone else wrote', egress: 'can send data out' };

export function compileFlows(rules: readonly FlowRule[], durationMs: (text: string) => number): CompiledFlowRule[] {
  return rules.map((r, i) => ({
    pointer: `/flows/${i}`, after: [...new Set(r.after)], then: r.then as Record<string, 'approve' | 'deny'>,
    windowMs: durationMs(r.window), message: r.on_deny, approval: r.approval,
  }));
}

/** Whether a call may need the touched roles at all: its tool has a role some rule acts on. */
export function flowsMatter(rules: readonly CompiledFlowRule[], roles: readonly string[]): boolean {
  return rules.some((r) => roles.some((role) => Object.hasOwn(r.then, role)));
}

/** `04:50:03Z` today, the date too when older than a day. */
function when(at: number, now: number): string {
  const iso = new Date(at).toISOString();
  return now - at < 86_400_000 ? `${iso.slice(11, 19)}Z` : `${iso.slice(0, 19)}Z`;
}

/**
 * SPEC 11: the strictest rule whose `after` roles the agent has all touched within its window,
 * acting on a role of this call's tool. Deny beats approve; among equals the first rule.
 */
export function judgeFlows(rules: readonly CompiledFlowRule[], tool: string, hint: FlowHint, now: number): FlowVerdict | null {
  let best: FlowVerdict | null = null;
  rules.forEach((r, index) => {
    const role = hint.roles.find((x) => r.then[x] === 'deny') ?? hint.roles.find((x) => Object.hasOwn(r.then, x));
    if (!role) return;
    const verdict = r.then[role];
    if (best && (best.verdict === 'deny' || verdict === 'approve')) return;
    const because: FlowTouch[] = [];
    for (const need of r.after) {
      const latest = hint.touched.filter((t) => t.role === need && t.at > now - r.windowMs).at(-1);
      if (!latest) return;
      because.push(latest);
    }
    const calls = because.map((t) => `${t.tool} on ${t.server} at ${when(t.at, now)} (${t.role})`).join('; ');
    const had = r.after.map((a) => NOUN[a] ?? a).join(' and ');
    const minutes = Math.round(r.windowMs / 60_000);
    const lead = r.message ? `${r.message} ` : '';
    const message = `${lead}This agent has touched ${had} in the last ${minutes >= 60 && minutes % 60 === 0 ? `${minutes / 60} h` : `${minutes} min`}: ${calls}. "${tool}" ${WHAT[role] ?? role} (${role}), so ${verdict === 'deny' ? 'it is denied' : 'it needs human approval'} (data-flow rule ${r.pointer}).`;
    best = { verdict, rule: `${r.pointer}/then/${role}`, message, index, because };
  });
  return best;
}
