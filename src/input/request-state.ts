import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalJson, sha256 } from '../policy/load.js';
import type { RequestStateStore } from '../state/types.js';

/**
 * Signed `requestState` (MCP 2026-07-28 multi round-trip requests). When toolgate answers a
 * tools/call with `resultType: "input_required"` — its own (a call held for approval, asked of a
 * modern client) or an upstream's passed on — the `requestState` the client must echo in its retry
 * is one toolgate made: `tg1.<payload>.<mac>`, the payload base64url JSON, the MAC an HMAC-SHA256
 * of it with the state store's key, so any process on the same state can check it. It binds the
 * retry to one call (grant, server, tool, SHA-256 of the canonical arguments), says what it
 * continues (an approval id, or the upstream's own state and audit row), and carries an expiry and
 * a nonce spent on first use (single use, across the fleet on Redis).
 */

const PREFIX = 'tg1.';
/** Longer texts are refused before any work (an upstream's own state rides inside: kept generous). */
const MAX_STATE_CHARS = 1_048_576;
const NONCE = /^[A-Za-z0-9_-]{22}$/;

/** The call a state is bound to. `grant` is the grant's id (labels are not unique). */
export interface CallBinding {
  grant: string;
  server: string;
  tool: string;
  args: Record<string, unknown>;
}

/** What a state continues. */
export type Continuation =
  | { kind: 'approval'; approval: string }
  /** An upstream's input_required: its own state (absent when it gave none) and the call's audit row. */
  | { kind: 'upstream'; upstream?: string; audit?: string };

export type Claims = Continuation & {
  /** Rounds the call has had so far (the first answer that asked for input ends round 1). */
  round: number;
  /** When the call began (ms since epoch): the audit row's latency counts from it. */
  started: number;
  expiresAt: number;
};

/** Why a state is refused, in words an agent can act on. */
export type Refusal = { reason: 'malformed' | 'tampered' | 'expired' | 'other-call' | 'replayed'; text: string };

interface Payload {
  v: 1;
  k: 'approval' | 'upstream';
  g: string;
  s: string;
  t: string;
  h: string;
  a?: string;
  u?: string;
  c?: string;
  r: number;
  b: number;
  e: number;
  n: string;
}

/** SHA-256 of the canonical JSON of the arguments: what "the same arguments" means. */
export function argsHash(args: Record<string, unknown>): string {
  return sha256(canonicalJson(args));
}

export class RequestStates {
  constructor(private readonly store: RequestStateStore, private readonly now: () => number = Date.now) {}

  private async mac(payload: string): Promise<Buffer> {
    const key = await this.store.signingKey();
    return createHmac('sha256', Buffer.from(key, 'base64url')).update(payload).digest();
  }

  /** A new state for `call`, continuing `what`, valid until `claims.expiresAt`. */
  async sign(call: CallBinding, claims: Claims): Promise<string> {
    const p: Payload = {
      v: 1, k: claims.kind, g: call.grant, s: call.server, t: call.tool, h: argsHash(call.args),
      r: claims.round, b: claims.started, e: claims.expiresAt, n: randomBytes(16).toString('base64url'),
    };
    if (claims.kind === 'approval') p.a = claims.approval;
    else {
      if (claims.upstream !== undefined) p.u = claims.upstream;
      if (claims.audit !== undefined) p.c = claims.audit;
    }
    const body = Buffer.from(JSON.stringify(p)).toString('base64url');
    return `${PREFIX}${body}.${(await this.mac(body)).toString('base64url')}`;
  }

  /**
   * The claims of a state presented with `call`, once checked: toolgate made it (the MAC), it has
   * not expired, it was made for this grant, server, tool and these exact arguments, and it was
   * not used before — it is used now (its nonce spent; nothing is spent when any other check fails).
   */
  async verify(state: unknown, call: CallBinding): Promise<{ claims: Claims } | { refusal: Refusal }> {
    const p = await this.open(state);
    if ('refusal' in p) return p;
    const now = this.now();
    if (now >= p.e) return refuse('expired', `The requestState expired ${Math.ceil((now - p.e) / 1000)} s ago; make the call again.`);
    const other = p.g !== call.grant ? 'another grant' : p.s !== call.server ? 'another server'
      : p.t !== call.tool ? 'another tool' : p.h !== argsHash(call.args) ? 'other arguments' : null;
    if (other) return refuse('other-call', `The requestState was issued for ${other}: a retry must repeat its call exactly. Make the call again without inputResponses and requestState.`);
    if (!(await this.store.spend(p.n, p.e, now))) return refuse('replayed', 'The requestState was already used: each one continues its call once. Make the call again.');
    const base = { round: p.r, started: p.b, expiresAt: p.e };
    if (p.k === 'approval') return { claims: { kind: 'approval', approval: p.a!, ...base } };
    return { claims: { kind: 'upstream', ...(p.u !== undefined ? { upstream: p.u } : {}), ...(p.c !== undefined ? { audit: p.c } : {}), ...base } };
  }

  /** The payload of a well-formed state with a valid MAC, or why not. */
  private async open(state: unknown): Promise<Payload | { refusal: Refusal }> {
    const malformed = refuse('malformed', 'The requestState is not one toolgate issued; make the call again without inputResponses and requestState.');
    if (typeof state !== 'string' || state.length > MAX_STATE_CHARS || !state.startsWith(PREFIX)) return malformed;
    const dot = state.indexOf('.', PREFIX.length);
    if (dot < 0) return malformed;
    const body = state.slice(PREFIX.length, dot);
    const given = Buffer.from(state.slice(dot + 1), 'base64url');
    const expected = await this.mac(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return refuse('tampered', 'The requestState does not carry toolgate\'s signature (changed, or made elsewhere); make the call again without inputResponses and requestState.');
    }
    let p: unknown;
    try {
      p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      return malformed;
    }
    return wellFormed(p) ? p : malformed;
  }
}

function refuse(reason: Refusal['reason'], text: string): { refusal: Refusal } {
  return { refusal: { reason, text } };
}

/** Signed by toolgate, so this only guards against a key shared with an older, different format. */
function wellFormed(p: unknown): p is Payload {
  if (!p || typeof p !== 'object' || Array.isArray(p)) return false;
  const o = p as Record<string, unknown>;
  const str = (v: unknown) => typeof v === 'string';
  const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  return o.v === 1 && (o.k === 'approval' ? str(o.a) : o.k === 'upstream') && str(o.g) && str(o.s) && str(o.t) && str(o.h)
    && num(o.r) && num(o.b) && num(o.e) && typeof o.n === 'string' && NONCE.test(o.n)
    && (o.u === undefined || str(o.u)) && (o.c === undefined || str(o.c));
}
