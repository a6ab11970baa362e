import type { Approval } from '../state/types.js';

/** "5m", "2s", "1h30m": the largest units that add up exactly (rounded to seconds). */
export function formatDuration(ms: number): string {
  let s = Math.max(0, Math.round(ms / 1000));
  if (s === 0) return '0s';
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86_400], ['h', 3600], ['m', 60], ['s', 1]] as const) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)}${unit}`);
      s %= size;
    }
  }
  return parts.join('');
}

/** How a person approves or denies: the CLI command (with the state it needs, when not the default). */
export interface HowTo {
  approve(id: string): string;
  deny(id: string): string;
}

export function cliHowTo(stateFlag = ''): HowTo {
  const extra = stateFlag ? ` ${stateFlag}` : '';
  return {
    approve: (id) => `toolgate approvals approve ${id}${extra}`,
    deny: (id) => `toolgate approvals deny ${id}${extra}`,
  };
}

export function waitingMessage(a: Approval, now: number, how: HowTo): string {
  return `Waiting for approval ${a.id} (expires in ${formatDuration(a.expiresAt - now)}): ${how.approve(a.id)}`;
}

/** Once per held call, for the person at the terminal (stderr in toolgate run, the log in serve). */
export function heldNotice(a: Approval, now: number, how: HowTo): string {
  return `"${a.tool}" on ${a.server} is held for approval ${a.id} (expires in ${formatDuration(a.expiresAt - now)}). Approve: ${how.approve(a.id)}   Deny: ${how.deny(a.id)}`;
}

export function retryMessage(a: Approval, now: number, how: HowTo): string {
  if (a.status === 'approved') return `Approval ${a.id} is approved; make the same call again to use it.`;
  return `${a.reason} Approval ${a.id} is pending (expires in ${formatDuration(a.expiresAt - now)}): once a person approves it (${how.approve(a.id)}), make the same call again.`;
}

/** What the agent reads when a held call ends without being forwarded. */
export function outcomeMessage(a: Approval, timeoutMs: number): string {
  switch (a.status) {
    case 'denied': return `Denied by ${a.decidedBy ?? 'an approver'}${a.decisionReason ? `: ${a.decisionReason}` : '.'}`;
    case 'timeout': return `Approval timed out after ${formatDuration(timeoutMs)}`;
    default: return `Approval ${a.id} was already used by an identical call; make the call again to ask for a new approval.`;
  }
}

/** The approval as the admin API, the CLI's --json, webhooks and the dashboard see it: times as ISO strings. */
export function approvalView(a: Approval): Record<string, unknown> {
  const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
  return {
    id: a.id, status: a.status, server: a.server, grant: a.grant, session: a.session, client: a.client ?? null,
    tool: a.tool, args: a.args, rule: a.rule, reason: a.reason, via: a.via,
    requestedAt: iso(a.requestedAt), expiresAt: iso(a.expiresAt), validFor: formatDuration(a.validForMs),
    decidedBy: a.decidedBy ?? null, decidedAt: iso(a.decidedAt) ?? null, decisionReason: a.decisionReason ?? null,
    validUntil: iso(a.validUntil) ?? null, usedAt: iso(a.usedAt) ?? null,
  };
}
