/**
 * JSON-RPC batches, decided by the session's negotiated protocol version, the same on every
 * transport. MCP 2025-03-26 allows them (and 2024-11-05, on plain JSON-RPC 2.0): each element is
 * then handled as if it came alone, so the policy judges every call in it. 2025-06-18 removed
 * them: a batch is refused whole with one -32600 error and nothing in it is forwarded. Before the
 * server has answered initialize no version is agreed, and a batch is refused too (initialize
 * itself must never be part of one).
 */
import { idKey, isObject, isValidId, type Id, type Json } from './messages.js';

/** The last revision that allows batches. */
const LAST_WITH_BATCHES = '2025-03-26';

export function batchesAllowed(version: string | undefined): boolean {
  return version !== undefined && version <= LAST_WITH_BATCHES;
}

/** Why a client's batch is refused whole (answer -32600 with it), or null when its elements go on one by one. */
export function batchRefusal(batch: readonly unknown[], version: string | undefined): string | null {
  if (!batchesAllowed(version)) {
    return version === undefined
      ? 'Invalid Request: a JSON-RPC batch before the session is initialized is refused (send initialize alone); nothing in it was forwarded'
      : `Invalid Request: JSON-RPC batches are not part of MCP ${version} (only 2025-03-26 and earlier allow them); nothing in it was forwarded: send one message at a time`;
  }
  if (batch.length === 0) return 'Invalid Request: an empty batch';
  if (batch.some(Array.isArray)) return 'Invalid Request: a batch holds messages, not other batches; nothing in it was forwarded';
  const keys = requestIds(batch).map(idKey);
  if (new Set(keys).size !== keys.length) return 'Invalid Request: two requests of the batch share an id; nothing in it was forwarded';
  if (batch.some((m) => isObject(m) && m.method === 'initialize')) return 'Invalid Request: initialize must not be part of a JSON-RPC batch; nothing in it was forwarded';
  return null;
}

/** The ids of the batch's requests: the answers a batch reply waits for. */
export function requestIds(batch: readonly unknown[]): Id[] {
  return batch.filter((m): m is Json => isObject(m) && typeof m.method === 'string' && isValidId(m.id)).map((m) => m.id as Id);
}

/**
 * For transports that answer on the message channel itself (stdio, legacy SSE): the answers to a
 * batch's requests go back together, as one JSON array in request order, as JSON-RPC asks.
 * Everything else (notifications, server requests, answers to single requests) passes at once.
 */
export class BatchReplies {
  private readonly open: { keys: string[]; answers: Map<string, string> }[] = [];

  constructor(private readonly send: (message: Json | Json[], raw: string | undefined) => void) {}

  /** A batch was accepted: its requests' answers are collected from now. */
  expect(batch: readonly unknown[]): void {
    const keys = requestIds(batch).map(idKey);
    if (keys.length > 0) this.open.push({ keys, answers: new Map() });
  }

  /** A message for the client: held when it answers a request of an open batch. */
  deliver(message: Json, raw?: string): void {
    if (this.open.length === 0 || Object.hasOwn(message, 'method') || !isValidId(message.id)) return this.send(message, raw);
    const key = idKey(message.id);
    const i = this.open.findIndex((b) => b.keys.includes(key) && !b.answers.has(key));
    if (i < 0) return this.send(message, raw);
    const batch = this.open[i];
    batch.answers.set(key, raw ?? JSON.stringify(message));
    if (batch.answers.size < batch.keys.length) return;
    this.open.splice(i, 1);
    const text = `[${batch.keys.map((k) => batch.answers.get(k)).join(',')}]`;
    this.send(JSON.parse(text) as Json[], text);
  }
}
