import { escapeControls } from '../display/index.js';
import type { Approval } from '../state/types.js';
import { argsText } from './mask.js';

/**
 * The `elicitation/create` params that ask the client's user about one held call: one field,
 * approve or deny. The user is an approver like any other: arguments in full, escaped, masked
 * as everywhere (SPEC section 4).
 */
export function elicitationParams(a: Pick<Approval, 'id' | 'tool' | 'args' | 'reason' | 'masked'>): Record<string, unknown> {
  const masked = a.masked?.length ? `\nMasked: ${escapeControls(a.masked.join('; '))}` : '';
  return {
    message: `Toolgate is holding a call to "${escapeControls(a.tool)}" for approval ${a.id}. ${escapeControls(a.reason)}\nArguments:\n${argsText(a.args)}${masked}\nApprove this call?`,
    requestedSchema: {
      type: 'object',
      properties: { decision: { type: 'string', title: 'Decision', description: `Approve or deny the call to ${escapeControls(a.tool)}`, enum: ['approve', 'deny'] } },
      required: ['decision'],
    },
  };
}

/**
 * What the user's answer means: accept with `approve` approves; accept with `deny`, decline and
 * cancel deny. Null when the answer is not an elicitation result (an error): other channels decide.
 */
export function elicitationDecision(answer: Record<string, unknown>): { approve: boolean; reason?: string } | null {
  const result = answer.result;
  if (!result || typeof result !== 'object' || Array.isArray(result)) return null;
  const { action, content } = result as { action?: unknown; content?: unknown };
  const approve = action === 'accept' && !!content && typeof content === 'object' && (content as { decision?: unknown }).decision === 'approve';
  if (approve) return { approve };
  return { approve, reason: action === 'accept' ? 'denied in the client' : `${String(action)} in the client` };
}
