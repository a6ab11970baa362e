/**
 * Which client→server methods toolgate forwards: only those the MCP revision in use defines
 * (requests and notifications a client sends; a client's answers to server requests carry no
 * method and always pass), plus the operator's `passthrough_methods`. Anything else is answered
 * -32601 Method not found and never forwarded: a lenient server might read `tools.call`,
 * `tools/call/`, `Tool/Call` or `tools/ｃａｌｌ` as `tools/call` and run a tool nobody judged.
 * Lists from the schema.ts of each revision (and the SDK's ClientRequest / ClientNotification).
 */
import { skeleton } from '../engine/index.js';

export const METHOD_NOT_FOUND = -32601;

const REQUESTS_2024_11_05 = [
  'initialize', 'ping', 'completion/complete', 'logging/setLevel', 'prompts/get', 'prompts/list',
  'resources/list', 'resources/templates/list', 'resources/read', 'resources/subscribe', 'resources/unsubscribe',
  'tools/call', 'tools/list',
];
const NOTIFICATIONS_2024_11_05 = ['notifications/cancelled', 'notifications/progress', 'notifications/initialized', 'notifications/roots/list_changed'];
/** 2025-11-25 adds tasks (a client polls, fetches and cancels the tasks its calls created). */
const TASKS = ['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel', 'notifications/tasks/status'];

const BASE = new Set([...REQUESTS_2024_11_05, ...NOTIFICATIONS_2024_11_05]);
const LATEST = new Set([...BASE, ...TASKS]);

/** The client methods of a protocol revision; a revision newer than toolgate knows gets the newest list it knows. */
export function clientMethods(version: string | undefined): ReadonlySet<string> {
  // 2024-11-05, 2025-03-26 and 2025-06-18 define the same client methods (2025-06-18 added only a server request).
  return version !== undefined && version < '2025-11-25' ? BASE : LATEST;
}

/** Methods whose effect or answer toolgate polices. */
const POLICED = ['tools/call', 'tools/list'];

/**
 * How a lenient server might read a method name: look-alike letters folded and invisible
 * characters dropped (the tool-name skeleton), then case and every separator ignored.
 */
function reading(method: string): string {
  return skeleton(method).replace(/[^a-z0-9]+/g, '');
}

/** Every spelling of a policed method a lenient server could map to it: plural or not, noun or verb first. */
const POLICED_READINGS = new Map(POLICED.flatMap((m) => {
  const [noun, verb] = m.split('/');
  const one = noun.replace(/s$/, '');
  return [noun, one].flatMap((n) => [`${n}${verb}`, `${n}${verb}s`, `${verb}${n}`]).map((r) => [r, m] as const);
}));

/** The policed method (`tools/call`, `tools/list`) that a server could take this name for, if any. */
export function imitates(method: string): string | undefined {
  return POLICED_READINGS.get(reading(method));
}

/**
 * Why a passthrough method is refused in a configuration, or undefined. A policed method, or a
 * name a lenient server could take for one, would let calls past the policy.
 */
export function passthroughProblem(method: string): string | undefined {
  if (!/^[\x21-\x7e]+$/.test(method)) return `"${method}" is not a plain method name (printable ASCII without spaces)`;
  const policed = imitates(method);
  if (policed) return `"${method}" could be read as ${policed} by a lenient server; toolgate judges ${policed} itself and never passes a look-alike through`;
  return undefined;
}

/**
 * Why a client's method is not forwarded (answered -32601), or null. `version`: the session's
 * negotiated protocol version (undefined before the server has answered initialize).
 */
export function methodRefusal(method: string, version: string | undefined, passthrough: readonly string[] = []): string | null {
  if (clientMethods(version).has(method) || passthrough.includes(method)) return null;
  const policed = imitates(method);
  const printable = JSON.stringify(method);
  if (policed) return `Method not found: ${printable} is not ${policed}; toolgate forwards only methods spelt exactly as the MCP specification defines them`;
  return `Method not found: ${printable} is not a method of MCP ${version ?? 'clients'}, so toolgate does not forward it (an operator can allow it with passthrough_methods)`;
}

/** The newest revision toolgate knows. */
export const LATEST_VERSION = '2025-11-25';

/**
 * The version a session runs under, from the server's initialize answer: a revision date as MCP
 * writes them (YYYY-MM-DD). Anything else ("", "latest", a number) is taken as the newest
 * revision toolgate knows, so it cannot turn batches on ("" sorts before every date).
 */
export function sessionVersion(answered: unknown): string {
  return typeof answered === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(answered) ? answered : LATEST_VERSION;
}
