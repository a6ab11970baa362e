import type { AuditDecision, AuditLog } from '../audit/index.js';
import type { ApprovalSettings } from '../engine/compile.js';
import type { Logger } from '../log.js';
import type { Approval, ApprovalStore } from '../state/types.js';
import { bindingOf, newApprovalId, normaliseApprovalId } from './ids.js';
import { maskForApprover } from './mask.js';
import { cliHowTo, heldNotice, type HowTo } from './text.js';
import { webhookBody, WebhookSender, type WebhookConfig } from './webhook.js';

export { bindingOf, newApprovalId, normaliseApprovalId } from './ids.js';
export { argsText, maskForApprover, MASKED_FIELD } from './mask.js';
export { elicitationDecision, elicitationParams } from './elicitation.js';
export { apiHowTo, approvalView, cliHowTo, MEMORY_STATE_REFUSAL, unreachableHowTo, formatDuration, outcomeMessage, restartMessage, retryMessage, waitingMessage, type HowTo } from './text.js';
export { signature, SIGNATURE_HEADER, TIMESTAMP_HEADER, DELIVERY_HEADER, type WebhookConfig } from './webhook.js';

/** The channels a decision can come through (SPEC section 4); a policy's `approval.via` names the allowed ones. */
export type Channel = 'dashboard' | 'cli' | 'api' | 'webhook' | 'client';

const CHANNELS: readonly Channel[] = ['dashboard', 'cli', 'api', 'webhook', 'client'];

/**
 * The channel an approval was decided through: `decidedBy` is always `<channel>:<name>` (decide()
 * makes it so). Unknown (an approval from before, or undecided): '?', which no policy allows.
 */
export function approvalChannel(a: Pick<Approval, 'decidedBy'>): Channel | '?' {
  const prefix = (a.decidedBy ?? '').split(':')[0] as Channel;
  return CHANNELS.includes(prefix) ? prefix : '?';
}

/** A tools/call the engine held for approval. */
export interface HeldCall {
  server: string;
  /** The grant's label (shown to people) and id (what limits and approvals are keyed by). */
  grant: string;
  grantId: string;
  session: string;
  client?: string;
  tool: string;
  args: Record<string, unknown>;
  rule: string;
  reason: string;
  settings: ApprovalSettings;
}

function settledText(a: Approval): string {
  switch (a.status) {
    case 'pending': case 'timeout': return 'timed out: the call was denied; it waits again when it is made again';
    case 'used': return `was already approved by ${a.decidedBy ?? '?'} and used`;
    case 'unused': return `was approved by ${a.decidedBy ?? '?'} but expired unused`;
    default: return `was already ${a.status} by ${a.decidedBy ?? '?'}`;
  }
}

export class ApprovalError extends Error {
  constructor(readonly status: 400 | 403 | 404 | 409, message: string) {
    super(message);
  }
}

/** A held call that was not held: its grant has as many calls waiting as `approval.max_pending` allows. */
export class ApprovalRefused extends Error {}

export interface ApprovalsOptions {
  store: ApprovalStore;
  audit?: AuditLog;
  log: Logger;
  /** How a person approves, in messages to agents, terminals and webhooks. */
  howTo?: HowTo;
  /** Told once per newly held call (toolgate run: a line on stderr). */
  onHeld?: (approval: Approval, notice: string) => void;
  /** The webhook of a server, if it has one. */
  webhook?: (server: string) => WebhookConfig | undefined;
  webhookBackoffMs?: number;
  /** How long ended approvals (denied, timed out, used, unused) are kept before they are deleted; default 7 days. */
  retentionMs?: number;
  now?: () => number;
}

type Waiter = (approval: Approval) => void;

const SWEEP_MS = 5_000;
export const DEFAULT_RETENTION_MS = 7 * 86_400_000;
/** At most this often (or the retention, when shorter), ended approvals past the retention are deleted, up to 20 batches of 1,000. */
const PURGE_EVERY_MS = 60_000;
const PURGE_BATCH = 1_000;
const PURGE_BATCHES = 20;

/**
 * Human approval for one process: opens approvals for held calls (or finds the live one for the
 * same call), waits for decisions made here or in any other process on the same state, takes
 * decisions from the channels, and audits every step. The store decides who wins each
 * transition; only the winner audits it.
 */
export class Approvals {
  readonly howTo: HowTo;
  private readonly waiters = new Map<string, Set<Waiter>>();
  private unwatch?: () => void;
  private readonly webhooks: WebhookSender;
  private readonly sweeper: NodeJS.Timeout;
  private readonly now: () => number;
  private lastPurge = 0;
  /** Approvals this process has announced on its terminal (bounded: emptied whole at 10,000). */
  private readonly announced = new Set<string>();

  constructor(private readonly opts: ApprovalsOptions) {
    this.howTo = opts.howTo ?? cliHowTo();
    this.now = opts.now ?? Date.now;
    this.webhooks = new WebhookSender({ log: opts.log, backoffMs: opts.webhookBackoffMs });
    this.sweeper = setInterval(() => { this.sweep().catch((err: Error) => opts.log.error({ err: err.message }, 'approval sweep failed')); }, SWEEP_MS);
    this.sweeper.unref();
  }

  get store(): ApprovalStore {
    return this.opts.store;
  }

  /** The webhook configured for a server, if any (its secret authenticates the receiver's decisions). */
  webhookOf(server: string): WebhookConfig | undefined {
    return this.opts.webhook?.(server);
  }

  /**
   * The live approval for this exact call (pending, or approved and not yet used), or a new
   * pending one: audited, announced on stderr or in the log, and posted to the server's webhook.
   * Throws ApprovalRefused when the grant already has `approval.max_pending` calls waiting.
   */
  async open(call: HeldCall): Promise<{ approval: Approval; fresh: boolean }> {
    const binding = bindingOf(call);
    const now = this.now();
    const live = await this.opts.store.findLive(binding, now);
    if (live) {
      // A call that joins an approval opened earlier — by a process or agent that gave up waiting —
      // would otherwise wait in silence: the person at this terminal never saw its id.
      if (live.status === 'pending' && !this.announced.has(live.id)) {
        this.remember(live.id);
        this.opts.onHeld?.(live, heldNotice(live, now, this.howTo, call.settings.mode, true));
      }
      return { approval: live, fresh: false };
    }
    const shown = maskForApprover(call.args);
    const max = call.settings.maxPending;
    const approval: Approval = {
      id: newApprovalId(), server: call.server, grant: call.grant, grantId: call.grantId, session: call.session, client: call.client, tool: call.tool,
      args: shown.args, ...(shown.masked.length > 0 ? { masked: shown.masked } : {}), binding, rule: call.rule, reason: call.reason, via: call.settings.via,
      requestedAt: now, expiresAt: now + call.settings.timeoutMs, validForMs: call.settings.validForMs, status: 'pending',
    };
    // Counted and created in one atomic step of the store: concurrent held calls (on any instance) cannot all pass on the same count.
    const created = this.opts.store.createIfUnder(approval, max, now);
    if (!(created instanceof Promise ? await created : created)) {
      throw new ApprovalRefused(`${max} calls of this grant already wait for approval (approval.max_pending); this one was not held. Wait until a person decides one of them, then make the call again.`);
    }
    this.audit(approval, 'approval_requested', `${approval.id}: ${call.reason}`);
    this.remember(approval.id);
    this.opts.onHeld?.(approval, heldNotice(approval, now, this.howTo, call.settings.mode));
    const hook = approval.via.includes('webhook') ? this.opts.webhook?.(call.server) : undefined;
    if (hook) this.webhooks.send(hook, webhookBody(approval, hook.format, this.howTo));
    return { approval, fresh: true };
  }

  private remember(id: string): void {
    if (this.announced.size >= 10_000) this.announced.clear();
    this.announced.add(id);
  }

  /**
   * Resolves with the approval once it is no longer pending (approved, denied, timed out — or
   * used by an identical call first), or with null when `signal` aborts (the client gave up: the
   * approval itself stays pending). Times it out at its expiry.
   */
  wait(approval: Approval, signal?: AbortSignal): Promise<Approval | null> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(null);
      let set = this.waiters.get(approval.id);
      if (!set) this.waiters.set(approval.id, (set = new Set()));
      const done = (a: Approval | null) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        set.delete(waiter);
        if (set.size === 0) this.waiters.delete(approval.id);
        if (this.waiters.size === 0) { this.unwatch?.(); this.unwatch = undefined; }
        resolve(a);
      };
      const waiter: Waiter = (a) => done(a);
      const aborted = () => done(null);
      set.add(waiter);
      signal?.addEventListener('abort', aborted);
      this.unwatch ??= this.opts.store.watch((a) => { if (a.status !== 'pending') this.wake(a); });
      const timer = setTimeout(() => { this.timeOut(approval.id).catch((err: Error) => this.opts.log.error({ err: err.message }, 'approval timeout failed')); }, Math.max(0, approval.expiresAt - this.now()));
      timer.unref();
      // A decision made between opening and watching is not missed.
      void Promise.resolve(this.opts.store.get(approval.id)).then((a) => { if (a && a.status !== 'pending') this.wake(a); });
    });
  }

  private wake(a: Approval): void {
    for (const w of [...(this.waiters.get(a.id) ?? [])]) w(a);
  }

  private async timeOut(id: string): Promise<void> {
    const decided = await this.opts.store.decide(id, { status: 'timeout', by: 'toolgate', at: this.now() });
    if (decided) {
      this.audit(decided, 'timeout', `${id}: no decision in time`);
      this.wake(decided);
      return;
    }
    const current = await this.opts.store.get(id);
    if (current && current.status !== 'pending') this.wake(current);
  }

  /** Takes an approved approval for its one call; false when it was used (or ran out) first. */
  async use(id: string): Promise<boolean> {
    return this.opts.store.consume(id, this.now());
  }

  /**
   * A person's decision through a channel. Refused clearly when the id is unknown, the approval
   * is no longer pending, or the policy does not let this channel decide it.
   */
  async decide(idText: string, approve: boolean, by: string, channel: Channel, reason?: string): Promise<Approval> {
    const id = normaliseApprovalId(idText);
    // The channel is read back from `by` at release (approvalChannel): it must name this channel.
    if (!by.startsWith(`${channel}:`)) by = `${channel}:${by}`;
    const current = id ? await this.opts.store.get(id) : null;
    if (!id || !current) throw new ApprovalError(404, `no approval with id "${idText}": toolgate approvals list shows the pending ones`);
    if (!current.via.includes(channel)) throw new ApprovalError(403, `approval ${id} cannot be decided through ${channel}: the policy allows ${current.via.join(', ')}`);
    const decided = await this.opts.store.decide(id, { status: approve ? 'approved' : 'denied', by, reason, at: this.now() });
    if (!decided) {
      const now = await this.opts.store.get(id);
      throw new ApprovalError(409, `approval ${id} ${now ? settledText(now) : 'is gone'}`);
    }
    this.audit(decided, approve ? 'approved' : 'rejected', `${id}: ${approve ? 'approved' : 'denied'} by ${by}${reason ? `: ${reason}` : ''}`);
    this.wake(decided);
    return decided;
  }

  /**
   * Times out what expired and marks approvals nobody used; each is audited once, by whoever ends
   * it. Now and then deletes ended approvals older than the retention (the audit log keeps every step).
   */
  async sweep(): Promise<void> {
    const now = this.now();
    for (const a of await this.opts.store.expire(now)) {
      this.audit(a, a.status === 'timeout' ? 'timeout' : 'unused', `${a.id}: ${a.status === 'timeout' ? 'no decision in time' : `approved by ${a.decidedBy ?? '?'} but the call was not made again in time`}`);
      this.wake(a);
    }
    const retention = this.opts.retentionMs ?? DEFAULT_RETENTION_MS;
    if (now - this.lastPurge >= Math.min(PURGE_EVERY_MS, retention)) {
      this.lastPurge = now;
      // A backlog goes in batches, with a turn of the event loop between them.
      let purged = 0;
      for (let i = 0; i < PURGE_BATCHES; i++) {
        const n = await this.opts.store.purge(now - retention, PURGE_BATCH);
        purged += n;
        if (n < PURGE_BATCH) break;
        await new Promise((r) => setImmediate(r));
      }
      if (purged > 0) this.opts.log.debug({ purged }, 'ended approvals past their retention deleted');
    }
  }

  private audit(a: Approval, decision: AuditDecision, message: string): void {
    this.opts.audit?.append({ kind: 'approval', server: a.server, grant: a.grant, session: a.session, client: a.client, tool: a.tool, decision, rule: a.rule, message });
  }

  close(): void {
    clearInterval(this.sweeper);
    this.unwatch?.();
    this.webhooks.close();
  }
}
