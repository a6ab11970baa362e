import { ApprovalError, elicitationDecision, elicitationParams, outcomeMessage } from '../approvals/index.js';
import type { CallContext } from '../engine/index.js';
import type { CallBinding } from '../input/request-state.js';
import { APPROVAL_INPUT, inputRequiredResult, MAX_ROUNDS, UPSTREAM_STATE_TTL_MS } from '../input/results.js';
import type { Approval } from '../state/types.js';
import { ApprovalHolds } from './session-approvals.js';
import type { Pending } from './session-types.js';
import { errorResponse, isObject, INTERNAL_ERROR, INVALID_PARAMS, type Id, type Json } from './messages.js';

/** The rule a refused retry names. */
const STATE_RULE = '(request-state)';

/**
 * Multi round-trip calls (MCP 2026-07-28 input_required). A round ends with an input_required
 * answer — toolgate's own, asking a modern client's user to approve a held call (`via: client`),
 * or the upstream's, passed on — carrying a requestState toolgate signed (src/input/request-state.ts);
 * the client's retry with `inputResponses` and that state continues the call:
 *
 * - the state is checked first (toolgate's key, not expired, this grant, server, tool and exactly
 *   these arguments, not used before): a retry that changes the tool or the arguments is refused
 *   (a JSON-RPC error, -32602), not taken for a new call — its inputResponses answer what was asked
 *   about the first call; inputResponses with no state at all are a new call, which carries them;
 * - the call is then decided again (the policy, kill switch, pins and grant may have changed);
 * - it is charged once: an approval retry takes its limits when released, as any approved call;
 *   an upstream's retry takes none, its limits were taken (and committed) by its first round;
 * - it has one audit row: the row written when the call was first forwarded gets the final
 *   outcome, "after N rounds"; the approval's steps are its own rows, as for every approval.
 */
export abstract class InputRounds extends ApprovalHolds {
  protected binding(ctx: Pick<CallContext, 'tool' | 'args'>): CallBinding {
    const { identity } = this.opts;
    return { grant: identity.grant.id ?? identity.grant.label, server: identity.serverName, tool: ctx.tool, args: ctx.args };
  }

  protected async askInput(id: Id, key: string, ctx: CallContext, pending: Pending, approval: Approval): Promise<void> {
    const round = pending.round ?? 1;
    // Good while the approval can still act: pending until its expiry, then approved (by any channel) for valid_for.
    const expiresAt = approval.expiresAt + approval.validForMs;
    const state = await this.opts.requestStates!.sign(this.binding(ctx), { kind: 'approval', approval: approval.id, round, started: ctx.now, expiresAt });
    if (this.pending.get(key) !== pending) return;
    this.pending.delete(key);
    pending.held = undefined;
    const ask = { method: 'elicitation/create', params: { mode: 'form', ...elicitationParams(approval) } };
    this.opts.toClient({ jsonrpc: '2.0', id, result: inputRequiredResult({ [APPROVAL_INPUT]: ask }, state) });
  }

  /**
   * An upstream answered a forwarded call with input_required: the round is over, not the call.
   * Its limits stay taken (the call was sent and answered), its audit row says `input_required`
   * until the last round's outcome replaces it, and the client gets the upstream's requests with
   * toolgate's requestState, which carries the upstream's own inside.
   */
  protected passInput(pending: Pending, message: Json): void {
    const result = message.result as Json;
    const round = pending.round ?? 1;
    this.finish(pending, 'input_required', true);
    // The retry may reach another process on this audit log: the row is stored before the client hears of the round.
    this.opts.audit?.hurry();
    const theirs = typeof result.requestState === 'string' ? result.requestState : undefined;
    const binding = this.binding({ tool: pending.tool!, args: pending.args ?? {} });
    const claims = { kind: 'upstream' as const, upstream: theirs, audit: pending.audit?.eventId, round, started: pending.started, expiresAt: this.now() + UPSTREAM_STATE_TTL_MS };
    this.opts.requestStates!.sign(binding, claims).then(
      (state) => this.opts.toClient({ ...message, result: { ...result, requestState: state } }),
      (err: Error) => {
        this.opts.log.error({ err: err.message }, 'could not sign a requestState');
        this.opts.toClient(errorResponse(message.id as Id, INTERNAL_ERROR, `The upstream MCP server asked for input, but toolgate could not sign the state of the call (${err.message}); make the call again.`));
      },
    );
  }

  /** A tools/call that says it continues an earlier one: checked, then decided again (see the class). */
  protected async retried(id: Id, key: string, message: Json, ctx: CallContext): Promise<void> {
    const params = message.params as Json;
    const pending: Pending = { method: 'tools/call', started: ctx.now, id, tool: ctx.tool };
    this.pending.set(key, pending);
    const refuse = (text: string) => this.refuseState(id, key, ctx, text);
    if (params.requestState === undefined) {
      // No state: this continues no round toolgate knows of, so it is a new call, decided and charged
      // as one (round 1), and its inputResponses are the client's own answers to its own call, passed
      // on as SEP-2322 lets a client send them (the upstream uses what it recognizes, and asks again
      // for what it misses) — except an answer to toolgate's own approval question, which only a
      // state can carry: dropped, so such a call is held and asked about again.
      this.pending.delete(key);
      if (isObject(params.inputResponses)) {
        const { [APPROVAL_INPUT]: _ours, ...theirs } = params.inputResponses;
        params.inputResponses = theirs;
      }
      return this.toolsCall(id, key, message, { round: 1, charged: false });
    }
    const states = this.opts.requestStates;
    if (!states) return refuse('This toolgate cannot continue a call (no requestState key); make the call again without inputResponses and requestState.');
    const checked = await states.verify(params.requestState, this.binding(ctx));
    if (this.pending.get(key) !== pending) return;
    if ('refusal' in checked) return refuse(checked.refusal.text);
    const { claims } = checked;
    if (claims.round >= MAX_ROUNDS) return refuse(`The call took ${claims.round} rounds of input; toolgate stops at ${MAX_ROUNDS}. Make the call again.`);
    const responses = params.inputResponses;
    delete params.requestState;
    delete params.inputResponses;
    const next = claims.round + 1;
    if (claims.kind === 'upstream') {
      // The upstream gets its own state back, and the answers to what it asked.
      if (claims.upstream !== undefined) params.requestState = claims.upstream;
      if (responses !== undefined) params.inputResponses = responses;
      this.pending.delete(key);
      // Its row, where this process's audit log has it; else (another instance's log) a row here that says whose call it continues.
      const row = claims.audit !== undefined && this.opts.audit?.holds(claims.audit) ? { eventId: claims.audit } : undefined;
      const note = row || claims.audit === undefined ? undefined : `continues call ${claims.audit} (round ${next}; charged where it began)`;
      return this.toolsCall(id, key, message, { round: next, charged: true, audit: row, note });
    }
    const approval = await this.answerApproval(claims.approval, isObject(responses) ? responses[APPROVAL_INPUT] : undefined);
    if (this.pending.get(key) !== pending) return;
    if (!approval) return refuse(`Approval ${claims.approval} is gone; make the call again to ask for a new approval.`);
    if (approval.status !== 'pending' && approval.status !== 'approved') {
      return this.deny(id, key, ctx, approval.rule, outcomeMessage(approval, approval.expiresAt - approval.requestedAt), { approval: { id: approval.id, status: approval.status } });
    }
    // Pending (no answer yet) or approved: the usual path decides it again; an approved call is released there, once.
    this.pending.delete(key);
    return this.toolsCall(id, key, message, { round: next, charged: false });
  }

  /**
   * A retry whose requestState is refused (changed, made elsewhere, expired, used before, for another
   * call, too many rounds): a JSON-RPC error, invalid params, as SEP-2322 has a server reject state
   * that fails its integrity check (a result would read as the call's end). Its audit row says why.
   */
  private refuseState(id: Id, key: string, ctx: CallContext, text: string): void {
    this.pending.delete(key);
    this.record(ctx, 'deny', STATE_RULE, text, false, this.traces.get(key));
    this.opts.log.debug({ tool: ctx.tool, rule: STATE_RULE }, 'refused a requestState');
    this.opts.toClient(errorResponse(id, INVALID_PARAMS, `Invalid params: ${text}`));
  }

  /** The user's answer, if any, decides the approval (as the client channel); returns it as it stands now. */
  private async answerApproval(approvalId: string, answer: unknown): Promise<Approval | null> {
    const approvals = this.opts.approvals;
    if (!approvals) return null;
    const decision = isObject(answer) ? elicitationDecision({ result: answer }) : null;
    if (decision) {
      try {
        return await approvals.decide(approvalId, decision.approve, `client:${this.clientName ?? 'unknown'}`, 'client', decision.reason);
      } catch (err) {
        // Decided elsewhere first, or the client may not decide it: what stands is read below.
        if (!(err instanceof ApprovalError)) throw err;
      }
    }
    return approvals.store.get(approvalId);
  }
}
