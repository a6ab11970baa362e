import type { Approval, ApprovalDecision, ApprovalStatus, ApprovalStore } from './types.js';

const ENDED = new Set<ApprovalStatus>(['denied', 'timeout', 'used', 'unused']);

/** When an ended approval last changed: its decision, its use, or the end of its validity. */
export function endedAt(a: Approval): number {
  return Math.max(a.decidedAt ?? 0, a.usedAt ?? 0, a.validUntil ?? 0);
}

/** Approvals in this process only (tests, `memory:` state). Single-threaded JS makes each transition atomic. */
export class MemoryApprovalStore implements ApprovalStore {
  private readonly approvals = new Map<string, Approval>();
  private readonly listeners = new Set<(a: Approval) => void>();

  private changed(a: Approval): void {
    for (const l of this.listeners) l({ ...a });
  }

  create(approval: Approval): void {
    if (this.approvals.has(approval.id)) throw new Error(`approval ${approval.id} already exists`);
    this.approvals.set(approval.id, { ...approval });
    this.changed(approval);
  }

  createIfUnder(approval: Approval, max: number, now: number): boolean {
    if (this.countPending(approval.grantId ?? approval.grant, now) >= max) return false;
    this.create(approval);
    return true;
  }

  get(id: string): Approval | null {
    const a = this.approvals.get(id);
    return a ? { ...a } : null;
  }

  list(opts: { status?: ApprovalStatus; limit?: number } = {}): Approval[] {
    const all = [...this.approvals.values()].filter((a) => !opts.status || a.status === opts.status);
    return all.sort((x, y) => y.requestedAt - x.requestedAt).slice(0, opts.limit ?? 100).map((a) => ({ ...a }));
  }

  decide(id: string, d: ApprovalDecision): Approval | null {
    const a = this.approvals.get(id);
    if (!a || a.status !== 'pending' || (d.status !== 'timeout' && d.at >= a.expiresAt)) return null;
    Object.assign(a, { status: d.status, decidedBy: d.by, decidedAt: d.at, decisionReason: d.reason });
    if (d.status === 'approved') a.validUntil = d.at + a.validForMs;
    this.changed(a);
    return { ...a };
  }

  consume(id: string, at: number): boolean {
    const a = this.approvals.get(id);
    if (!a || a.status !== 'approved' || at >= (a.validUntil ?? 0)) return false;
    a.status = 'used';
    a.usedAt = at;
    this.changed(a);
    return true;
  }

  findLive(binding: string, now: number): Approval | null {
    let best: Approval | null = null;
    for (const a of this.approvals.values()) {
      if (a.binding !== binding) continue;
      const live = (a.status === 'pending' && now < a.expiresAt) || (a.status === 'approved' && now < (a.validUntil ?? 0));
      if (live && (!best || a.requestedAt > best.requestedAt)) best = a;
    }
    return best ? { ...best } : null;
  }

  expire(now: number): Approval[] {
    const out: Approval[] = [];
    for (const a of this.approvals.values()) {
      if (a.status === 'pending' && now >= a.expiresAt) Object.assign(a, { status: 'timeout', decidedBy: 'toolgate', decidedAt: now });
      else if (a.status === 'approved' && now >= (a.validUntil ?? 0)) a.status = 'unused';
      else continue;
      this.changed(a);
      out.push({ ...a });
    }
    return out;
  }

  countPending(grant: string, now: number): number {
    // by grant id (the label only for approvals made before ids): a label can be shared
    let n = 0;
    for (const a of this.approvals.values()) if ((a.grantId ?? a.grant) === grant && a.status === 'pending' && now < a.expiresAt) n++;
    return n;
  }

  purge(before: number, limit: number): number {
    let n = 0;
    for (const [id, a] of this.approvals) {
      if (n >= limit) break;
      if (ENDED.has(a.status) && endedAt(a) < before) {
        this.approvals.delete(id);
        n++;
      }
    }
    return n;
  }

  watch(listener: (a: Approval) => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }
}
