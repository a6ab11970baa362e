import type { CompiledPolicy } from './compile.js';

export type ToolVerdict = 'Allowed' | 'Rate-limited' | 'Needs approval' | 'Hidden';

/**
 * What a policy does to a tool, in the words of the records: Hidden (removed from tools/list and
 * denied: hidden, unlisted under default deny, or action deny), Needs approval (always or under
 * some condition), Rate-limited, or Allowed. `conditional` says require/deny_if may still deny.
 */
export function toolVerdict(policy: CompiledPolicy, name: string): { verdict: ToolVerdict; rule: string; conditional: boolean } {
  const { hidden, entry } = policy.lookup(name);
  if (hidden) return { verdict: 'Hidden', rule: hidden, conditional: false };
  if (!entry) return { verdict: 'Hidden', rule: '(default)', conditional: false };
  if (entry.action === 'deny') return { verdict: 'Hidden', rule: entry.pointer, conditional: false };
  const conditional = entry.checks.require.length + entry.checks.denyIf.length > 0;
  if (entry.action === 'approve' || entry.approveIf.length > 0) return { verdict: 'Needs approval', rule: entry.pointer, conditional };
  if (entry.checks.limits.length > 0) return { verdict: 'Rate-limited', rule: entry.checks.limits[0].pointer, conditional };
  return { verdict: 'Allowed', rule: entry.pointer, conditional };
}
