/**
 * Input-required results (MCP 2026-07-28 multi round-trip requests): a request answered with
 * `resultType: "input_required"`, `inputRequests` (elicitation, sampling or roots requests, keyed
 * by names the server chooses) and `requestState`; the client answers them by sending the same
 * request again with `inputResponses` (the bare results, under the same names) and the
 * `requestState` echoed byte for byte, on a new request id.
 */

export const INPUT_REQUIRED = 'input_required';

/** The name under which toolgate asks a modern client's user to approve a held call. */
export const APPROVAL_INPUT = 'dev.toolgate/approval';

/** Rounds one call may take through toolgate (the SDK's client stops at 10 by default). */
export const MAX_ROUNDS = 50;

/** How long the client has to answer an upstream's input_required (its user may be asked something). */
export const UPSTREAM_STATE_TTL_MS = 60 * 60_000;

type Json = Record<string, unknown>;

export function isInputRequired(result: unknown): result is Json {
  return !!result && typeof result === 'object' && !Array.isArray(result) && (result as Json).resultType === INPUT_REQUIRED;
}

/** An input_required result asking for the given inputs, carrying `requestState`. */
export function inputRequiredResult(inputRequests: Json, requestState: string): Json {
  return { resultType: INPUT_REQUIRED, inputRequests, requestState };
}
