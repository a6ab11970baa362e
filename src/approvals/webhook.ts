import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import type { Approval } from '../state/types.js';
import { escapeControls } from '../display/index.js';
import { argsText } from './mask.js';
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

/** Slack's longest message text; past it Slack cuts the message, so a longer one says where to look instead. */
const SLACK_TEXT_MAX = 39_000;

/**
 * Untrusted text for a Slack-style message: invisible characters escaped; `&`, `<`, `>` as
 * entities (so no `<!channel>`, `<@U…>` or link markup); a zero-width space after `@` before
 * here/channel/everyone or a user id (no mention even where plain mentions are parsed);
 * backticks as ˋ (so text cannot close the code block the arguments are shown in).
 */
export function slackEscape(text: string): string {
  return escapeControls(text, true)
    .replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/@(here|channel|everyone|[UW][A-Z0-9]{6,})/gi, '@\u200b$1')
    .replace(/`/g, 'ˋ');
}

/**
 * An untrusted one-line field for a Slack message: escaped (see `slackEscape`, newlines too) and
 * shown as inline code, where Slack applies no formatting — so `*`, `_`, `~` and `>`
 * in a tool name, label or reason show as themselves and cannot fake bold, italics, strikes or a
 * quote around toolgate's own words. Backticks are already gone, so the span cannot be closed.
 */
export function slackInline(text: string): string {
  return `\`${slackEscape(escapeControls(text))}\``;
}

function slackText(a: Approval, how: HowTo): string {
  const inline = slackInline;
  const args = slackEscape(argsText(a.args));
  const head = [
    `:raised_hand: ${inline(a.tool)} on ${inline(a.server)} (grant ${inline(a.grant)}) is waiting for approval \`${a.id}\` (expires in ${formatDuration(a.expiresAt - a.requestedAt)}).`,
    `Why: ${inline(a.reason)}`,
    a.masked?.length ? `Masked: ${inline(a.masked.join('; '))}` : '',
  ].filter(Boolean);
  const tail = `Approve: \`${how.approve(a.id)}\`   Deny: \`${how.deny(a.id)}\` (or POST /api/approvals/${a.id}/approve on the gateway)`;
  const body = args.length <= SLACK_TEXT_MAX
    ? ['Arguments (secrets masked):', '```' + args + '```']
    : [`Arguments: ${args.length} characters, too long for a chat message; see them in full with \`toolgate approvals list\` or on the dashboard before deciding.`];
  return [...head, ...body, tail].join('\n');
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
