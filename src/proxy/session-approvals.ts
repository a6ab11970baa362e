import { ApprovalRefused, approvalChannel, elicitationDecision, elicitationParams, outcomeMessage, restartMessage, retryMessage, waitingMessage, type Approvals } from '../approvals/index.js';
import type { CallContext, Decision } from '../engine/index.js';
import type { Approval } from '../state/types.js';
import { CallPath } from './session-calls.js';
import type { Pending } from './session-types.js';
import { denialResult, type Id, type Json } from './messages.js';

/** How often a held call whose client asked for progress hears that it is still waiting. */
const PROGRESS_EVERY_MS = 10_000;
/** The rule a held call answered at a gateway's stop names: no policy rule decided it. */
export const RESTART_RULE = '(restart)';

/**
 * Calls held for approval: the hold (CLI, web, or the client's user by elicitation), the release
 * of an approved call (checked and decided again), and the denials when it is not approved.
 */
export abstract class ApprovalHolds extends CallPath {
  /** The client declared the elicitation capability in its initialize request. */
  protected clientElicits = false;
  /** The gateway is stopping: a call that would wait for approval is answered at once instead. */
  protected restarting = false;

  /**
   * The gateway stops: every call waiting for approval is answered "the gateway is restarting,
   * call again", and so is any call that would start waiting from now on. Their approvals stay in
   * the store (pending, or approved meanwhile), and the same call made again — after the restart,
   * or on another instance — finds its approval and is released once, as in retry mode. A call
   * being released (approved, decided again) is in flight already and goes on. Returns how many
   * calls were waiting.
   */
  restart(): number {
    this.restarting = true;
    let waiting = 0;
    for (const p of this.pending.values()) {
      if (p.held && !p.releasing) {
        waiting++;
        p.held.abort();
      }
    }
    return waiting;
  }

  /** A held call's answer at a stop; the approval, if one was opened, is read again for its status. */
  protected async answerRestart(id: Id, key: string, pending: Pending, ctx: CallContext, approvalId?: string): Promise<void> {
    const approvals = this.opts.approvals!;
    const current = approvalId === undefined ? undefined : await Promise.resolve(approvals.store.get(approvalId)).catch(() => undefined);
    if (this.pending.get(key) !== pending) return;
    this.pending.delete(key);
    const text = restartMessage(current, this.now(), approvals.howTo);
    this.record(ctx, 'deny', RESTART_RULE, text);
    const meta = current ? { approval: { id: current.id, status: current.status } } : undefined;
    this.opts.toClient(denialResult(id, text, RESTART_RULE, 1, meta, '[GATEWAY RESTARTING]'));
  }

  /** Answers a held call of a modern client with an input_required result asking its user to approve (InputRounds). */
  protected abstract askInput(id: Id, key: string, ctx: CallContext, pending: Pending, approval: Approval): Promise<void>;

  /**
   * Holds a call for approval without holding up the session: other messages go on while it
   * waits. Ends in the call forwarded (approved, limits taken), denied, or — when the client
   * gives up — nothing sent at all, the approval staying pending for the same call made again.
   */
  protected hold(id: Id, key: string, message: Json, ctx: CallContext, pending: Pending, decision: Decision): void {
    const approvals = this.opts.approvals!;
    const settings = decision.approval!;
    const held = new AbortController();
    pending.held = held;
    pending.heldBy = decision.rule;
    pending.trace?.held();
    const run = async () => {
      const { identity } = this.opts;
      let opened: Awaited<ReturnType<Approvals['open']>>;
      try {
        opened = await approvals.open({
          server: identity.serverName, grant: identity.grant.label, grantId: identity.grant.id ?? identity.grant.label, session: identity.sessionId, client: ctx.session.client,
          tool: ctx.tool, args: ctx.args, rule: decision.rule, reason: decision.message ?? `"${ctx.tool}" needs human approval.`, settings,
        });
      } catch (err) {
        if (!(err instanceof ApprovalRefused)) throw err;
        if ((!held.signal.aborted || this.restarting) && this.pending.get(key) === pending) this.deny(id, key, ctx, decision.rule, err.message);
        return;
      }
      const { approval } = opened;
      pending.trace?.approvalId(approval.id);
      if (this.restarting && (held.signal.aborted || approval.status === 'pending')) return this.answerRestart(id, key, pending, ctx, approval.id);
      if (held.signal.aborted) return;
      const meta = (a: typeof approval) => ({ approval: { id: a.id, status: a.status } });
      if (approval.status === 'approved') return this.release(id, key, message, pending, approval, held.signal);
      if (settings.mode === 'retry') {
        pending.trace?.approvalEnded('retry');
        return this.deny(id, key, ctx, decision.rule, retryMessage(approval, this.now(), approvals.howTo), meta(approval));
      }
      if (settings.via.includes('client') && this.clientElicits) {
        // A modern client is asked in the answer itself (input_required); its retry continues the call (session-input.ts).
        if (this.opts.clientEra === 'modern' && this.opts.requestStates) return this.askInput(id, key, ctx, pending, approval);
        this.elicit(approval, id);
      }
      const progress = waitProgress(pending, (m) => this.opts.toClient(m), () => waitingMessage(approval, this.now(), approvals.howTo));
      const outcome = await approvals.wait(approval, held.signal).finally(progress);
      if (this.restarting && held.signal.aborted) return this.answerRestart(id, key, pending, ctx, approval.id);
      if (!outcome || this.pending.get(key) !== pending) return;
      pending.trace?.approvalEnded(outcome.status);
      if (outcome.status === 'approved') return this.release(id, key, message, pending, outcome, held.signal);
      this.deny(id, key, ctx, decision.rule, outcomeMessage(outcome, settings.timeoutMs), meta(outcome));
    };
    run().catch((err: Error) => this.failed(message, err));
  }

  /**
   * An approved call: checked again — the grant must still be valid, and the channel that
   * approved must still be one the current policy's `approval.via` allows for this call — then
   * decided again (kill switch, rules and limits still apply; only the wait for approval is
   * passed), and forwarded if the approval is still unused — it is used now.
   */
  private async release(id: Id, key: string, message: Json, pending: Pending, approval: Approval, signal: AbortSignal): Promise<void> {
    pending.releasing = true;
    const params = message.params as Json;
    const ctx = this.context(params.name as string, (params.arguments ?? {}) as Record<string, unknown>, params);
    const refused = await this.releaseRefusal(approval, ctx);
    if (refused) {
      // Ended, so that the same call made again asks for a new approval instead of finding this one.
      await this.opts.approvals!.use(approval.id);
      if (!signal.aborted && this.pending.get(key) === pending) this.deny(id, key, ctx, refused.rule, refused.text, { approval: { id: approval.id, status: approval.status } });
      return;
    }
    const flow = await this.flowHint(ctx, pending);
    const decision = await this.opts.engine.decide(ctx, { aliases: this.tools.aliases(ctx.tool), pinChanged: this.opts.pins?.isChanged(ctx.tool), poisoned: this.poisonedHint(ctx.tool), approved: true, charged: pending.charged, flow });
    if (signal.aborted || this.pending.get(key) !== pending) {
      void this.opts.engine.settle(decision, false);
      return;
    }
    if (decision.verdict === 'allow' || !decision.enforced) {
      if (!(await this.opts.approvals!.use(approval.id))) {
        void this.opts.engine.settle(decision, false);
        this.deny(id, key, ctx, decision.rule, `Approval ${approval.id} was already used by an identical call; make the call again to ask for a new approval.`);
        return;
      }
      decision.message = `approved by ${approval.decidedBy ?? '?'} (${approval.id})`;
    }
    if (this.pending.get(key) !== pending) {
      // Answered meanwhile (cancelled, or a stop's grace ran out while the approval was taken): never forwarded.
      void this.opts.engine.settle(decision, false);
      this.opts.log.warn({ tool: ctx.tool, approval: approval.id }, 'an approved call ended before it was forwarded');
      return;
    }
    pending.held = undefined;
    pending.started = ctx.now;
    this.carryOut(id, key, message, ctx, pending, decision);
  }

  /** Why an approved call may not be released now, or null. */
  private async releaseRefusal(approval: Approval, ctx: CallContext): Promise<{ rule: string; text: string } | null> {
    const problem = await this.opts.grantProblem?.();
    if (problem) return { rule: '(grant)', text: `Approval ${approval.id} cannot be used: ${problem}. The call was not forwarded.` };
    const current = this.opts.engine.evaluate(ctx, this.tools.aliases(ctx.tool));
    const channel = approvalChannel(approval);
    if (current.verdict === 'approve' && current.approval && !current.approval.via.includes(channel)) {
      return {
        rule: current.entry ? `${current.entry.pointer}/approval/via` : current.rule,
        text: `Approval ${approval.id} was given through ${channel}, which the current policy no longer allows for this call (approval.via: ${current.approval.via.join(', ')}). The call was not forwarded; make it again to ask for a new approval.`,
      };
    }
    return null;
  }

  /** Asks the client's user (MCP elicitation) to approve or deny; their answer decides the approval. */
  private elicit(approval: Approval, related: Id): void {
    const approvals = this.opts.approvals!;
    const by = `client:${this.clientName ?? 'unknown'}`;
    this.own.request('elicitation/create', elicitationParams(approval), 'client', related, Math.max(1, approval.expiresAt - this.now()))
      .then((answer) => {
        const decision = elicitationDecision(answer);
        if (decision) return approvals.decide(approval.id, decision.approve, by, 'client', decision.reason);
      })
      .catch((err: Error) => this.opts.log.debug({ err: err.message }, 'the elicitation did not decide the approval'));
  }
}

/** Progress notifications while a call waits, when the client asked for them; returns the stop function. */
function waitProgress(pending: Pending, toClient: (message: Json) => void, text: () => string): () => void {
  const token = pending.progressToken;
  if (token === undefined || (typeof token !== 'string' && typeof token !== 'number')) return () => {};
  let n = 0;
  const send = () => toClient({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: ++n, message: text() } });
  send();
  const timer = setInterval(send, PROGRESS_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
