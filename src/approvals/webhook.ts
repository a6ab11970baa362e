import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import type { Approval } from '../state/types.js';
import { approvalView, formatDuration, type HowTo } from './text.js';

export interface WebhookConfig {
  url: string;
  secret: string;
  format: 'json' | 'slack';
}

export const SIGNATURE_HEADER = 'x-toolgate-signature';
export const TIMESTAMP_HEADER = 'x-toolgate-timestamp';
export const DELIVERY_HEADER = 'x-toolgate-delivery';

/** `v1=` and the hex HMAC-SHA256, keyed with the secret, of `<timestamp>.<body>`. */
export function signature(secret: string, timestamp: string, body: string): string {
  return `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

function slackText(a: Approval, how: HowTo): string {
  return [
    `:raised_hand: *${a.tool}* on *${a.server}* (grant ${a.grant}) is waiting for approval \`${a.id}\` (expires in ${formatDuration(a.expiresAt - a.requestedAt)}).`,
    `Why: ${a.reason}`,
    'Arguments (secrets masked):',
    '```' + JSON.stringify(a.args, null, 2).slice(0, 2500) + '```',
    `Approve: \`${how.approve(a.id)}\`   Deny: \`${how.deny(a.id)}\` (or POST /api/approvals/${a.id}/approve on the gateway)`,
  ].join('\n');
}

export function webhookBody(a: Approval, format: WebhookConfig['format'], how: HowTo): string {
  if (format === 'slack') return JSON.stringify({ text: slackText(a, how) });
  return JSON.stringify({ event: 'approval.requested', approval: approvalView(a), approve: how.approve(a.id), deny: how.deny(a.id) });
}

export interface WebhookSenderOptions {
  log: Logger;
  /** Attempts in all (default 5) and the first delay, doubled after each failure (default 1 s). */
  attempts?: number;
  backoffMs?: number;
}

/**
 * Posts signed webhooks off the call path: `send` returns at once, deliveries retry with
 * exponential backoff on a network error or a non-2xx answer, and give up with a logged warning.
 * Each delivery keeps its id and timestamp across retries, so a receiver can drop duplicates.
 */
export class WebhookSender {
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;

  constructor(private readonly opts: WebhookSenderOptions) {}

  send(hook: WebhookConfig, body: string): void {
    const p = this.deliver(hook, body).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  private async deliver(hook: WebhookConfig, body: string): Promise<void> {
    const delivery = randomUUID();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'toolgate-webhook/1',
      [TIMESTAMP_HEADER]: timestamp,
      [SIGNATURE_HEADER]: signature(hook.secret, timestamp, body),
      [DELIVERY_HEADER]: delivery,
    };
    const attempts = this.opts.attempts ?? 5;
    let delay = this.opts.backoffMs ?? 1000;
    let last = '';
    for (let attempt = 1; attempt <= attempts && !this.stopped; attempt++) {
      try {
        const res = await fetch(hook.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer().catch(() => undefined);
        if (res.ok) return;
        last = `HTTP ${res.status}`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (attempt < attempts) {
        await new Promise((r) => setTimeout(r, delay).unref());
        delay *= 2;
      }
    }
    // The URL may carry a token in its query: only the host is logged.
    this.opts.log.warn({ host: new URL(hook.url).host, delivery }, `approval webhook not delivered after ${attempts} attempts (${last})`);
  }

  /** Stops retrying; deliveries already sent finish on their own. */
  close(): void {
    this.stopped = true;
  }
}
