import type { ResultPolicy } from './policy.js';
import { redactValue, tallyText, type Tally } from './redact.js';

/**
 * Redaction of what a server sends besides tools/call answers (SPEC section 11): the results of
 * resources/read and prompts/get, every JSON-RPC error, logging and progress notifications, and
 * the server's sampling and elicitation requests —
 * under the server's `results.redact`. Anything else passes unchanged.
 */

type Json = Record<string, unknown>;

/** Server notifications and requests whose params reach the model or the user's screen (sampling asks the client's model; elicitation shows the user a message). */
const NOTIFICATIONS = new Set(['notifications/message', 'notifications/progress', 'sampling/createMessage', 'elicitation/create']);
/** Client requests whose answers carry content to the model. */
const ANSWERS = new Set(['resources/read', 'prompts/get']);

/**
 * The message with its secrets redacted, or null when there is nothing to do. `answering` is the
 * method of the client request the message answers (undefined for a server request or notification).
 */
export function redactServerMessage(message: Json, policy: ResultPolicy | null, answering: string | undefined): { message: Json; redacted: Tally } | null {
  if (!policy?.redact) return null;
  const redacted: Tally = new Map();
  if (typeof message.method === 'string') {
    if (!NOTIFICATIONS.has(message.method) || message.params === undefined) return null;
    const params = redactValue(message.params, redacted);
    return params === message.params ? null : { message: { ...message, params }, redacted };
  }
  if (message.error !== undefined) {
    const error = redactValue(message.error, redacted);
    return error === message.error ? null : { message: { ...message, error }, redacted };
  }
  if (answering === undefined || !ANSWERS.has(answering) || message.result === null || typeof message.result !== 'object') return null;
  const result = redactValue(message.result, redacted) as Json;
  if (result === message.result) return null;
  const note = `[toolgate] Secrets were redacted from this ${answering === 'prompts/get' ? 'prompt' : 'resource'} (${tallyText(redacted)}) by the policy (${policy.redactPointer}): each is replaced by a [REDACTED <kind>] marker.`;
  const meta = result._meta !== null && typeof result._meta === 'object' ? result._meta : {};
  return { message: { ...message, result: { ...result, _meta: { ...meta, 'dev.toolgate/result': { redacted: Object.fromEntries(redacted), note } } } }, redacted };
}

/** A tasks/* answer (its result or error, whole) or task notification (its params) with its secrets redacted under its task's tool's policy, or null. */
export function redactTaskAnswer(message: Json, policy: ResultPolicy): { message: Json; redacted: Tally } | null {
  if (!policy.redact) return null;
  const redacted: Tally = new Map();
  const key = typeof message.method === 'string' ? 'params' : message.error !== undefined ? 'error' : 'result';
  const value = redactValue(message[key], redacted);
  return value === message[key] ? null : { message: { ...message, [key]: value }, redacted };
}
