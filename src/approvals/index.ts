import type { AuditDecision, AuditLog } from '../audit/index.js';
import { maskSecrets } from '../audit/mask.js';
import type { ApprovalSettings } from '../engine/compile.js';
import type { Logger } from '../log.js';
import type { Approval, ApprovalStore } from '../state/types.js';
import { bindingOf, newApprovalId, normaliseApprovalId } from './ids.js';
import { cliHowTo, heldNotice, type HowTo } from './text.js';
import { webhookBody, WebhookSender, type WebhookConfig } from './webhook.js';

export { bindingOf, newApprovalId, normaliseApprovalId } from './ids.js';
export { elicitationDecision, elicitationParams } from './elicitation.js';
export { approvalView, cliHowTo, formatDuration, outcomeMessage, retryMessage, waitingMessage, type HowTo } from './text.js';
export { signature, SIGNATURE_HEADER, TIMESTAMP_HEADER, DELIVERY_HEADER, type WebhookConfig } from './webhook.js';

/** The channels a decision can come through (SPEC section 4); a policy's `approval.via` names the allowed ones. */
export type Channel = 'dashboard' | 'cli' | 'api' | 'webhook' | 'client';

/** A tools/call the engine held for approval. */
export interface HeldCall {
  server: string;
  grant: string;
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
  now?: () => number;
}

type Waiter = (approval: Approval) => void;

const SWEEP_MS = 5_000;

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

  /**
   * The live approval for this exact call (pending, or approved and not yet used), or a new
   * pending one: audited, announced on stderr or in the log, and posted to the server's webhook.
   */
  async open(call: HeldCall): Promise<{ approval: Approval; fresh: boolean }> {
    const binding = bindingOf(call);
    const now = this.now();
    const live = await this.opts.store.findLive(binding, now);
    if (live) return { approval: live, fresh: false };
    const approval: Approval = {
      id: newApprovalId(), server: call.server, grant: call.grant, session: call.session, client: call.client, tool: call.tool,
      args: maskSecrets(call.args), binding, rule: call.rule, reason: call.reason, via: call.settings.via,
      requestedAt: now, expiresAt: now + call.settings.timeoutMs, validForMs: call.settings.validForMs, status: 'pending',
    };
    await this.opts.store.create(approval);
    this.audit(approval, 'approval_requested', `${approval.id}: ${call.reason}`);
    this.opts.onHeld?.(approval, heldNotice(approval, now, this.howTo));
    const hook = approval.via.includes('webhook') ? this.opts.webhook?.(call.server) : undefined;
    if (hook) this.webhooks.send(hook, webhookBody(approval, hook.format, this.howTo));
    return { approval, fresh: true };
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

  /** Times out what expired and marks approvals nobody used; each is audited once, by whoever ends it. */
  async sweep(): Promise<void> {
    for (const a of await this.opts.store.expire(this.now())) {
      this.audit(a, a.status === 'timeout' ? 'timeout' : 'unused', `${a.id}: ${a.status === 'timeout' ? 'no decision in time' : `approved by ${a.decidedBy ?? '?'} but the call was not made again in time`}`);
      this.wake(a);
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
