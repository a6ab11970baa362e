import { escapeControls } from '../display/index.js';
import type { Approval } from '../state/types.js';
import { argsText } from './mask.js';

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

/**
 * With a `memory:` state the held calls live only inside the gateway process: no command in
 * another terminal can see them, so the way to decide is the gateway's own admin API or dashboard.
 */
export function apiHowTo(): HowTo {
  return {
    approve: (id) => `POST /api/approvals/${id}/approve on this gateway (admin token), or Approve on its dashboard /ui/`,
    deny: (id) => `POST /api/approvals/${id}/deny on this gateway (admin token), or Deny on its dashboard /ui/`,
  };
}

/** `toolgate run` on a memory: state: nothing outside the process reaches its approvals, so it says how to make them reachable. */
export function unreachableHowTo(): HowTo {
  const why = 'no command can reach a memory: state (run with --state sqlite:PATH, or use a client that answers elicitation)';
  return { approve: () => why, deny: () => why };
}

/** The one line a state command gives for a `memory:` store (it would act on a throwaway copy). */
export const MEMORY_STATE_REFUSAL = 'the state store is memory: (private to the running gateway process): a command cannot see or change it; use the gateway\'s dashboard (/ui/) or admin API (/api/approvals, /api/grants, /api/kill-switch), or give the gateway a shared state (state: sqlite:PATH or redis://HOST:PORT)';

export function waitingMessage(a: Approval, now: number, how: HowTo): string {
  return `Waiting for approval ${a.id} (expires in ${formatDuration(a.expiresAt - now)}): ${how.approve(a.id)}`;
}

/** Once per held call, for the person at the terminal (stderr in toolgate run, the log in serve). */
export function heldNotice(a: Approval, now: number, how: HowTo, mode: 'hold' | 'retry' = 'hold', earlier = false): string {
  const since = earlier ? `, requested earlier at ${new Date(a.requestedAt).toISOString()} and still pending` : '';
  const what = mode === 'retry'
    ? `was denied pending approval ${a.id} (approval.mode retry${since}; expires in ${formatDuration(a.expiresAt - now)}): once approved, the same call made again passes once.`
    : `is held for approval ${a.id} (${since ? `${since.slice(2)}; ` : ''}expires in ${formatDuration(a.expiresAt - now)}).`;
  return `"${escapeControls(a.tool)}" on ${escapeControls(a.server)} ${what} Approve: ${how.approve(a.id)}   Deny: ${how.deny(a.id)}`;
}

export function retryMessage(a: Approval, now: number, how: HowTo): string {
  if (a.status === 'approved') return `Approval ${a.id} is approved; make the same call again to use it.`;
  return `${a.reason} Approval ${a.id} is pending (expires in ${formatDuration(a.expiresAt - now)}): once a person approves it (${how.approve(a.id)}), make the same call again.`;
}

/**
 * What the agent reads when the gateway stops while its call waits for approval: the approval
 * stays in the store, and the same call made again (after the restart, or on another instance)
 * finds it, as in retry mode.
 */
export function restartMessage(a: Approval | null | undefined, now: number, how: HowTo): string {
  const head = 'The gateway is restarting, so this call was not forwarded: call again.';
  if (!a) return head;
  if (a.status === 'approved') return `${head} Approval ${a.id} is approved: the same call made again runs once.`;
  if (a.status !== 'pending') return `${head} Approval ${a.id} ended (${a.status}): the call made again asks for a new one.`;
  return `${head} Approval ${a.id} stays pending (expires in ${formatDuration(a.expiresAt - now)}): once a person approves it (${how.approve(a.id)}), the same call made again runs once.`;
}

/** What the agent reads when a held call ends without being forwarded. */
export function outcomeMessage(a: Approval, timeoutMs: number): string {
  switch (a.status) {
    case 'denied': return `Denied by ${a.decidedBy ?? 'an approver'}${a.decisionReason ? `: ${a.decisionReason}` : '.'}`;
    case 'timeout': return `Approval timed out after ${formatDuration(timeoutMs)}`;
    default: return `Approval ${a.id} was already used by an identical call; make the call again to ask for a new approval.`;
  }
}

/**
 * The approval as the admin API, the CLI's --json, webhooks and the dashboard see it: times as
 * ISO strings; `args` as data (masked), `argsText` the same as text for a person (nothing cut,
 * invisible characters escaped) and `masked` where masking changed them.
 */
export function approvalView(a: Approval): Record<string, unknown> {
  const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
  return {
    id: a.id, status: a.status, server: a.server, grant: a.grant, grantId: a.grantId ?? null, session: a.session, client: a.client ?? null,
    tool: a.tool, args: a.args, argsText: argsText(a.args), masked: a.masked ?? [], rule: a.rule, reason: a.reason, via: a.via,
    requestedAt: iso(a.requestedAt), expiresAt: iso(a.expiresAt), validFor: formatDuration(a.validForMs),
    decidedBy: a.decidedBy ?? null, decidedAt: iso(a.decidedAt) ?? null, decisionReason: a.decisionReason ?? null,
    validUntil: iso(a.validUntil) ?? null, usedAt: iso(a.usedAt) ?? null,
  };
}
