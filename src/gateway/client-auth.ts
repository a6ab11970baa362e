import type { IncomingMessage } from 'node:http';
import type { AuditLog } from '../audit/index.js';
import type { McpAuth } from '../auth/index.js';
import type { Grant } from '../state/types.js';
import { AuthFailures, type FailureSummary } from './auth-failures.js';
import { clientAddress } from '../http/client-address.js';
import type { ServerConfig } from '../config/gateway.js';
import { HttpError } from '../http/errors.js';
import { ANONYMOUS } from './live-sessions.js';
import type { GatewayMetrics } from './metrics.js';

/** Failed authentication attempts per address and minute past which further failures get 429. */
const AUTH_FAILURE_LIMIT = 20;

export interface ClientAuthOptions {
  auth: McpAuth;
  metrics: GatewayMetrics;
  audit: AuditLog;
}

/** Who a request is: a grant's bearer token (or anonymous), with failed attempts counted, slowed and audited. */
export class ClientAuth {
  private readonly failures: AuthFailures;

  constructor(private readonly opts: ClientAuthOptions) {
    this.failures = new AuthFailures({ limit: AUTH_FAILURE_LIMIT, windowMs: 60_000, report: (f) => this.auditFailures(f) });
  }

  private get auth(): McpAuth {
    return this.opts.auth;
  }

  private get metrics(): GatewayMetrics {
    return this.opts.metrics;
  }

  /** Audits the failed attempts not yet reported. */
  flush(): void {
    this.failures.flush();
  }

  /** Bearer grant, or anonymous on an auth: none server. Failed attempts are counted and slowed; valid tokens never are. */
  async authenticate(req: IncomingMessage, name: string, server: ServerConfig): Promise<Grant> {
    if (server.auth === 'none') return { ...ANONYMOUS, server: name };
    const token = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const result = await this.auth.authenticate(token, name);
    if (result.ok) return result.grant;
    const refusal = this.auth.refusal(req, name, (req.url ?? '/').split('?')[0], result, !!token);
    if (result.status === 503) throw new HttpError(refusal.status, refusal.message, refusal.headers);
    this.metrics.authFailures.inc({ server: name });
    // A request without a token is how every OAuth client starts; only wrong tokens count as guesses.
    if (token) this.authFailed(req, name, result.reason);
    throw new HttpError(refusal.status, refusal.message, refusal.headers);
  }

  /** Counts a failed attempt; past the limit, the answer is 429 instead of the reason. */
  authFailed(req: IncomingMessage, target: string, reason: string): void {
    if (this.failures.failed(clientAddress(req), target, reason)) {
      throw new HttpError(429, 'too many failed authentication attempts from this address; try again in a minute', { 'retry-after': '60' });
    }
  }

  /** One audit row per address, target and minute of failed attempts. */
  private auditFailures(f: FailureSummary): void {
    const what = f.target === 'admin' ? 'admin API' : f.target === '/metrics' ? '/metrics' : `server ${f.target}`;
    const message = f.count === 1
      ? `${what}: ${f.reason} (from ${f.address})`
      : `${what}: ${f.count} failed attempts from ${f.address} in the minute from ${new Date(f.since).toISOString()}; the last: ${f.reason}`;
    this.opts.audit.append({ kind: 'auth', server: f.target === 'admin' || f.target === '/metrics' ? undefined : f.target, decision: 'deny', message });
  }
}
