import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApprovalError, approvalView, signature, SIGNATURE_HEADER, TIMESTAMP_HEADER, type Approvals, type Channel } from '../approvals/index.js';
import type { Approval, ApprovalStatus } from '../state/types.js';
import { send } from './admin-http.js';

const STATUSES: readonly ApprovalStatus[] = ['pending', 'approved', 'denied', 'timeout', 'used', 'unused'];
const API_CHANNELS: readonly Channel[] = ['api', 'dashboard', 'webhook'];
const KEEP_ALIVE_MS = 15_000;
/** How far a webhook receiver's signed decision may be from this clock. */
const WEBHOOK_SKEW_S = 300;

/** How the request to the admin API authenticated: the admin token (`api`) or the dashboard's own session cookie. */
export type AuthenticatedAs = 'api' | 'dashboard';

/** What a webhook receiver signs to decide as `webhook`: `<timestamp>.<approve|deny>.<approval id>`. */
export function webhookDecisionSignature(secret: string, timestamp: string, verb: 'approve' | 'deny', id: string): string {
  return signature(secret, timestamp, `${verb}.${id}`);
}

export class ApprovalApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** The approver as recorded: `<channel>:<name>`, the name a short printable label the caller gives (default admin). */
function approver(channel: Channel, by: unknown): string {
  const name = typeof by === 'string' ? by.replace(/[^\w.@+-]/g, '').slice(0, 64) : '';
  return `${channel}:${name || 'admin'}`;
}

/**
 * The channel a decision is recorded under is the one that authenticated, never one the caller
 * names: the admin token decides as `api`, the dashboard's session cookie as `dashboard`. `webhook`
 * (the receiver of the approval webhook answering) takes the admin token plus proof that the
 * caller holds the webhook's secret: `X-Toolgate-Timestamp` (Unix seconds, within 5 minutes) and
 * `X-Toolgate-Signature: v1=<hex HMAC-SHA256 of "<timestamp>.<approve|deny>.<id>">`.
 */
async function checkChannel(req: IncomingMessage, via: Channel, authenticatedAs: AuthenticatedAs, id: string, verb: 'approve' | 'deny', approvals: Approvals): Promise<void> {
  if (via === authenticatedAs) return;
  const means = authenticatedAs === 'api' ? 'the admin token' : 'the dashboard\'s session';
  if (via !== 'webhook' || authenticatedAs !== 'api') {
    throw new ApprovalApiError(403, `via: ${via} cannot be claimed: a decision made with ${means} is recorded as ${authenticatedAs}`);
  }
  const approval = await approvals.store.get(id.toLowerCase());
  const hook = approval ? approvals.webhookOf(approval.server) : undefined;
  const ts = req.headers[TIMESTAMP_HEADER];
  const sig = req.headers[SIGNATURE_HEADER];
  const fresh = typeof ts === 'string' && /^\d{1,12}$/.test(ts) && Math.abs(Date.now() / 1000 - Number(ts)) <= WEBHOOK_SKEW_S;
  const expected = hook && typeof ts === 'string' ? Buffer.from(webhookDecisionSignature(hook.secret, ts, verb, id.toLowerCase())) : undefined;
  const given = typeof sig === 'string' ? Buffer.from(sig) : undefined;
  if (!hook || !fresh || !expected || !given || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new ApprovalApiError(403, `via: webhook needs ${SIGNATURE_HEADER} (v1=HMAC-SHA256 with the server's webhook secret over "<timestamp>.${verb}.<id>") and a ${TIMESTAMP_HEADER} within 5 minutes; without them the admin token decides as api`);
  }
}

/**
 * `GET /api/approvals[?status=&limit=]`, `GET /api/approvals/<id>`, `POST /api/approvals/<id>/approve|deny`
 * with `{reason?, via?, by?}`, and `GET /api/approvals/stream` (server-sent events). Shapes: docs/approvals.md.
 * Returns false when the path is not an approvals path.
 */
export async function handleApprovalsApi(req: IncomingMessage, res: ServerResponse, path: string, url: URL, body: Record<string, unknown>, approvals: Approvals, authenticatedAs: AuthenticatedAs = 'api'): Promise<boolean> {
  const method = req.method ?? 'GET';
  if (path === '/api/approvals' && method === 'GET') {
    const status = url.searchParams.get('status') ?? undefined;
    if (status !== undefined && !STATUSES.includes(status as ApprovalStatus)) throw new ApprovalApiError(400, `status is one of ${STATUSES.join(', ')}`);
    const limit = Number(url.searchParams.get('limit') ?? 100);
    if (!Number.isInteger(limit) || limit <= 0 || limit > 1000) throw new ApprovalApiError(400, 'limit takes a whole number from 1 to 1000');
    await approvals.sweep();
    const list = await approvals.store.list({ status: status as ApprovalStatus | undefined, limit });
    send(res, 200, list.map(approvalView));
    return true;
  }
  if (path === '/api/approvals/stream' && method === 'GET') {
    stream(req, res, approvals);
    return true;
  }
  const m = /^\/api\/approvals\/([^/]+)(?:\/(approve|deny))?$/.exec(path);
  if (!m) return false;
  const id = decodeURIComponent(m[1]);
  try {
    if (!m[2] && method === 'GET') {
      const a = await approvals.store.get(id.toLowerCase());
      if (!a) throw new ApprovalError(404, `no approval with id "${id}"`);
      send(res, 200, approvalView(a));
      return true;
    }
    if (m[2] && method === 'POST') {
      const via = (body.via ?? authenticatedAs) as Channel;
      if (!API_CHANNELS.includes(via)) throw new ApprovalApiError(400, `via is one of ${API_CHANNELS.join(', ')}`);
      await checkChannel(req, via, authenticatedAs, id, m[2] as 'approve' | 'deny', approvals);
      if (body.reason !== undefined && typeof body.reason !== 'string') throw new ApprovalApiError(400, 'reason must be a string');
      const reason = typeof body.reason === 'string' ? body.reason.slice(0, 1000) : undefined;
      const decided = await approvals.decide(id, m[2] === 'approve', approver(via, body.by), via, reason);
      send(res, 200, approvalView(decided));
      return true;
    }
  } catch (err) {
    if (err instanceof ApprovalError) throw new ApprovalApiError(err.status, err.message);
    throw err;
  }
  throw new ApprovalApiError(405, `${method} is not allowed on ${path}`);
}

/**
 * Server-sent events: every pending approval at connect, then `pending` for each new one and
 * `decided` for each one that is approved, denied, timed out, used or unused. Comments keep the
 * connection alive.
 */
function stream(req: IncomingMessage, res: ServerResponse, approvals: Approvals): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' });
  const write = (a: Approval) => {
    if (!res.writableEnded) res.write(`event: ${a.status === 'pending' ? 'pending' : 'decided'}\ndata: ${JSON.stringify(approvalView(a))}\n\n`);
  };
  const stop = approvals.store.watch(write);
  const alive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  alive.unref();
  req.on('close', () => { stop(); clearInterval(alive); });
  void Promise.resolve(approvals.store.list({ status: 'pending', limit: 1000 })).then((list) => {
    for (const a of list.reverse()) write(a);
    res.write(': ready\n\n');
  });
}
