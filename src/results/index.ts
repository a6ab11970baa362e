import type { CallContext } from '../engine/conditions.js';
import type { CompiledPolicy } from '../engine/index.js';
import { factsText, shapeToolAnswer, type ResultFacts } from './apply.js';
import { redactServerMessage, redactTaskAnswer } from './other.js';
import { resultPolicyFor, serverResultPolicy } from './policy.js';
import type { Tally } from './redact.js';

export { factsText, RESULT_META_KEY, shapeToolAnswer, type ResultFacts } from './apply.js';
export { compileResults, hasResults, resultPolicyFor, serverResultPolicy, type ResultPolicy } from './policy.js';
export { kindLabel, marker, redactText, redactValue, type Tally } from './redact.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** What the result policy made of one server message: the message to send on and, for a tools/call answer, the facts for its audit row. */
export interface Shaped {
  message: Json;
  facts?: ResultFacts;
  redacted: Tally;
}

/**
 * The session's hook (SPEC section 11): a server message on its way to the client, and the
 * client request it answers (its method and, for tools/call, the tool). Null when the policy
 * leaves it as it is — and when the policy has no `results` anywhere, nothing else runs.
 */
export function shapeFromServer(policy: CompiledPolicy, message: Json, answering: { method: string; tool?: string; taskTool?: string } | undefined, context: (tool: string) => CallContext): Shaped | null {
  if (answering?.method.startsWith('tasks/') && answering.taskTool !== undefined) {
    // A task's answer carries its tool's result (tasks/result; a 2026-07-28 tasks/get inline):
    // the tool's result policy holds for it as for the call answered at once.
    const p = resultPolicyFor(policy, answering.taskTool);
    if (!p) return null;
    if (answering.method === 'tasks/result') {
      const shaped = shapeToolAnswer(message, p, context(answering.taskTool));
      return shaped && { message: shaped.message, facts: shaped.facts, redacted: shaped.facts.redacted };
    }
    const shaped = redactTaskAnswer(message, p);
    return shaped && { message: shaped.message, redacted: shaped.redacted };
  }
  if (answering?.method === 'tools/call' && answering.tool !== undefined) {
    const p = resultPolicyFor(policy, answering.tool);
    if (!p) return null;
    if (isObject(message.result) && message.result.resultType === 'input_required') {
      // A round, not the result: what the upstream asks (inputRequests, any text) is redacted;
      // its requestState is its own token, echoed back to it, and stays as it is.
      const { requestState, ...rest } = message.result;
      const shaped = redactTaskAnswer({ ...message, result: rest }, p);
      if (!shaped) return null;
      const result = { ...(shaped.message.result as Json), ...(requestState !== undefined ? { requestState } : {}) };
      return { message: { ...message, result }, redacted: shaped.redacted };
    }
    const shaped = shapeToolAnswer(message, p, context(answering.tool));
    return shaped && { message: shaped.message, facts: shaped.facts, redacted: shaped.facts.redacted };
  }
  const p = serverResultPolicy(policy);
  if (!p) return null;
  const shaped = redactServerMessage(message, p, answering?.method);
  return shaped && { message: shaped.message, redacted: shaped.redacted };
}

/** The audit outcome of a tools/call answer: `result`, with what the result policy did after it. */
export function outcomeWithFacts(outcome: string, facts: ResultFacts | undefined): string {
  const text = facts ? factsText(facts) : '';
  return text ? `${outcome}; ${text}` : outcome;
}
