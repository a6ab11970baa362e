/**
 * What a client message may carry past toolgate (SPEC section 9, "Unbypassable"). Toolgate judges
 * members by their exact names; a lenient server may read others: Go's encoding/json matches
 * member names case-insensitively (the last duplicate wins, K and ſ fold to k and s), go-sdk binds
 * arguments to struct fields the same way, and a JavaScript server that merges arguments with
 * Object.assign reads an own `__proto__` member as the object's prototype. So:
 *
 * - a message, its params and the arguments of a tools/call (at any depth) with two member names
 *   that fold to the same name (case, and the tool-name skeleton for names outside plain ASCII)
 *   are refused, and so is a member spelt like a known one in another case (`Method`, `Params`);
 * - requests and notifications are rebuilt from their known members (jsonrpc, id, method,
 *   params), tools/call params from theirs (name, arguments, _meta, task): unknown members are
 *   dropped, so what the server receives is what was judged;
 * - a client's answer is rebuilt as exactly {jsonrpc, id, result} or {jsonrpc, id, error};
 * - an own `__proto__` member anywhere in arguments, or a `constructor` holding `prototype`, is
 *   refused.
 *
 * Cheap on the hot path: one pass over each object's keys; a name in lower-case plain ASCII folds
 * to itself, so an object whose keys are all such needs no set; arguments are walked, not copied.
 */
import { skeleton } from '../engine/index.js';
import { INVALID_PARAMS, INVALID_REQUEST, isObject, type Json } from './messages.js';

const MESSAGE_MEMBERS = ['jsonrpc', 'id', 'method', 'params', 'result', 'error'];
/**
 * CallToolRequestParams: name and arguments, _meta (any request), task (task-augmented requests,
 * 2025-11-25), inputResponses and requestState (a retry that continues a call, 2026-07-28: checked
 * by the session before anything is forwarded; see session-input.ts).
 */
const CALL_MEMBERS = ['name', 'arguments', '_meta', 'task', 'inputResponses', 'requestState'];

const ASCII = /^[\x20-\x7e]*$/;

/** Printable ASCII without capitals, which folds to itself: the usual name, told without a regex. */
function foldsToItself(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || (c >= 0x41 && c <= 0x5a)) return false;
  }
  return true;
}

/**
 * The name a lenient reader may take `key` for: lower-cased; outside printable ASCII also the
 * tool-name skeleton (NFKC, so the Kelvin sign is k and long s is s; invisible characters
 * dropped; confusable letters folded).
 */
export function foldKey(key: string): string {
  if (foldsToItself(key)) return key;
  return ASCII.test(key) ? key.toLowerCase() : skeleton(key);
}

/**
 * Two member names of `obj` that fold to the same name, if any. Only possible when a name does
 * not fold to itself (distinct names that do are distinct folded): callers look for such a name
 * in their own pass over the keys and call this only then.
 */
export function foldedPair(obj: Json): [string, string] | undefined {
  const keys = Object.keys(obj);
  if (keys.length < 2) return undefined;
  let seen: Map<string, string> | undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    const folded = foldKey(key);
    if (seen === undefined) {
      if (folded === key) continue;
      // Every key before this one folds to itself.
      seen = new Map();
      for (let j = 0; j < i; j++) seen.set(keys[j], keys[j]);
    }
    const prior = seen.get(folded);
    if (prior !== undefined) return [prior, key];
    seen.set(folded, key);
  }
  return undefined;
}

/** The rebuilt object, or why it is refused and with which JSON-RPC error code. */
export type Shaped = { message: Json } | { refusal: string; code: number };

/**
 * `obj` rebuilt from the `known` members it has, or why it is refused: two names that fold
 * alike, or a name spelt like a known one in another case. Unknown members are dropped.
 */
function rebuild(obj: Json, known: readonly string[], what: string, code: number): Shaped {
  const out: Json = {};
  let odd = false;
  for (const key in obj) {
    if (known.includes(key)) out[key] = obj[key];
    else if (!odd && !foldsToItself(key)) odd = true;
  }
  // A name that folds to itself and is not known cannot be a known one in another case, nor fold like another name.
  if (!odd) return { message: out };
  const pair = foldedPair(obj);
  if (pair) return { refusal: `${what} has members ${JSON.stringify(pair[0])} and ${JSON.stringify(pair[1])}, which a server may read as one`, code };
  for (const key in obj) {
    if (known.includes(key)) continue;
    const folded = foldKey(key);
    const like = known.find((k) => k === folded);
    if (like) return { refusal: `${what} has a member ${JSON.stringify(key)}: member names are case-sensitive (${JSON.stringify(like)})`, code };
  }
  return { message: out };
}

/**
 * A client message rebuilt from its JSON-RPC members (unknown ones dropped; the caller checks
 * which combination it is), or why it is refused (-32600; -32602 for its params). Its params are checked for members
 * that fold alike; their content is passed as it is (tools/call params: `toolsCallParams`).
 */
export function clientMessage(message: Json): Shaped {
  const shaped = rebuild(message, MESSAGE_MEMBERS, 'Invalid request: the message', INVALID_REQUEST);
  if ('refusal' in shaped || !isObject(shaped.message.params) || !mayFold(shaped.message.params)) return shaped;
  const pair = foldedPair(shaped.message.params);
  if (pair) return { refusal: `Invalid params: params has members ${JSON.stringify(pair[0])} and ${JSON.stringify(pair[1])}, which a server may read as one`, code: INVALID_PARAMS };
  return shaped;
}

/** Whether some member name of `obj` does not fold to itself (then two may fold alike). */
function mayFold(obj: Json): boolean {
  for (const key in obj) if (!foldsToItself(key)) return true;
  return false;
}

/**
 * A client's answer to a server request, as exactly {jsonrpc, id, result} or {jsonrpc, id,
 * error} (result and error objects), or undefined when it is neither.
 */
export function clientAnswer(message: Json): Json | undefined {
  const hasResult = Object.hasOwn(message, 'result');
  if (hasResult === Object.hasOwn(message, 'error')) return undefined;
  const value = hasResult ? message.result : message.error;
  if (!isObject(value)) return undefined;
  return hasResult ? { jsonrpc: '2.0', id: message.id, result: value } : { jsonrpc: '2.0', id: message.id, error: value };
}

/**
 * tools/call params rebuilt from name, arguments, _meta and task, or why they are refused
 * (-32602): members that fold alike, arguments nested deeper than `maxDepth`, an own `__proto__`
 * or a `constructor` holding `prototype` anywhere in them. `_meta` and `task` pass as they are;
 * the arguments object is the client's own (checked, not copied).
 */
export function toolsCallParams(params: Json, maxDepth: number): Shaped {
  const shaped = rebuild(params, CALL_MEMBERS, 'Invalid params: tools/call params', INVALID_PARAMS);
  if ('refusal' in shaped) return shaped;
  const args = shaped.message.arguments;
  if (args !== undefined && isObject(args)) {
    const problem = argumentsProblem(args, maxDepth);
    if (problem) return { refusal: `Invalid params: tools/call arguments ${problem}`, code: INVALID_PARAMS };
  }
  // The answers a retry carries reach the server as its arguments do: the same bars.
  const answers = shaped.message.inputResponses;
  if (answers !== undefined) {
    const problem = isObject(answers) ? argumentsProblem(answers, maxDepth) : 'must be an object';
    if (problem) return { refusal: `Invalid params: tools/call inputResponses ${problem}`, code: INVALID_PARAMS };
  }
  return shaped;
}

/**
 * Why arguments are refused, or undefined. Walked iteratively (a hostile payload cannot overflow
 * the stack), each object's keys once; flat arguments allocate nothing.
 */
export function argumentsProblem(args: Json, maxDepth: number): string | undefined {
  const stack: unknown[] = [];
  const depths: number[] = [];
  let value: unknown = args;
  let depth = 1;
  for (;;) {
    if (depth > maxDepth) return 'are nested too deeply';
    if (Array.isArray(value)) {
      for (const item of value) if (item !== null && typeof item === 'object') { stack.push(item); depths.push(depth + 1); }
    } else {
      const problem = objectProblem(value as Json, stack, depths, depth + 1);
      if (problem) return problem;
    }
    if (stack.length === 0) return undefined;
    value = stack.pop();
    depth = depths.pop()!;
  }
}

/** Why one object of the arguments is refused, or undefined; its object members go on the stack. */
function objectProblem(obj: Json, stack: unknown[], depths: number[], childDepth: number): string | undefined {
  let odd = false;
  // JSON.parse makes an own, enumerable "__proto__": for…in lists it like any other member.
  for (const key in obj) {
    if (key === '__proto__') return 'have a member "__proto__", which a server that merges objects reads as their prototype';
    const child = obj[key];
    if (child !== null && typeof child === 'object') {
      if (key === 'constructor' && Object.hasOwn(child, 'prototype')) {
        return 'have a member "constructor" holding "prototype", which a server that merges objects deeply reads as every object\'s prototype';
      }
      stack.push(child);
      depths.push(childDepth);
    }
    if (!odd && !foldsToItself(key)) odd = true;
  }
  const pair = odd ? foldedPair(obj) : undefined;
  return pair && `have members ${JSON.stringify(pair[0])} and ${JSON.stringify(pair[1])}, which a server may read as one`;
}

/** Ids of server→client requests still waiting for the client's answer: only those may be answered. */
export class OpenServerRequests {
  private readonly open = new Set<string>();

  constructor(private readonly max = 10_000) {}

  asked(key: string): void {
    if (this.open.size >= this.max) for (const oldest of this.open) { this.open.delete(oldest); break; }
    this.open.add(key);
  }

  /** True (and no longer open) when `key` answers an open request. */
  answered(key: string): boolean {
    return this.open.delete(key);
  }
}
