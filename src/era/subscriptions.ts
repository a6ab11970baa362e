/**
 * `subscriptions/listen` (MCP 2026-07-28): a modern client asks for the list-changed
 * notifications it wants; toolgate acknowledges what the upstream can deliver and forwards each
 * such notification, stamped with the subscription's id, to every subscription that asked for it.
 * The subscription id is the listen request's own id.
 */
import { INVALID_PARAMS, errorResponse, isObject, type Id, type Json } from '../proxy/messages.js';
import type { ModernExchange } from './front.js';
import { SUBSCRIPTION_ID_KEY } from './versions.js';

const CHANGES: Record<string, { filter: string; capability: string }> = {
  'notifications/tools/list_changed': { filter: 'toolsListChanged', capability: 'tools' },
  'notifications/prompts/list_changed': { filter: 'promptsListChanged', capability: 'prompts' },
  'notifications/resources/list_changed': { filter: 'resourcesListChanged', capability: 'resources' },
};
/** Subscriptions open at once per internal session. */
const MAX_SUBSCRIPTIONS = 256;

interface Subscription { id: Id; honored: Json; exchange: ModernExchange }

function stamp(method: string, params: unknown, id: Id): Json {
  const p = isObject(params) ? params : {};
  return { jsonrpc: '2.0', method, params: { ...p, _meta: { ...(isObject(p._meta) ? p._meta : {}), [SUBSCRIPTION_ID_KEY]: id } } };
}

export class Subscriptions {
  private readonly open = new Set<Subscription>();

  get size(): number {
    return this.open.size;
  }

  /** A listen request: acknowledged with the honored part of its filter (narrowed to what the server advertises). */
  listen(message: Json, initialized: Json, exchange: ModernExchange): void {
    const id = message.id as Id;
    const requested = isObject(message.params) ? message.params.notifications : undefined;
    if (!isObject(requested)) {
      exchange.answer(errorResponse(id, INVALID_PARAMS, "Invalid params: 'notifications' is required and must be a subscription filter"));
      return;
    }
    if (this.open.size >= MAX_SUBSCRIPTIONS) {
      exchange.answer(errorResponse(id, -32603, 'Subscription limit reached'));
      return;
    }
    const caps = isObject(initialized.capabilities) ? initialized.capabilities : {};
    const honored: Json = {};
    for (const { filter, capability } of Object.values(CHANGES)) {
      const cap = caps[capability];
      if (requested[filter] === true && isObject(cap) && cap.listChanged === true) honored[filter] = true;
    }
    exchange.notify(stamp('notifications/subscriptions/acknowledged', { notifications: honored }, id));
    if (Object.keys(honored).length === 0) {
      // Nothing to deliver: closed gracefully at once.
      exchange.answer({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_KEY]: id } } });
      return;
    }
    this.open.add({ id, honored, exchange });
  }

  /** A change notification from the server: to every subscription that asked for it (true: it was one). */
  route(message: Json): boolean {
    const change = CHANGES[message.method as string];
    if (!change) return false;
    for (const s of this.open) if (s.honored[change.filter] === true) s.exchange.notify(stamp(message.method as string, message.params, s.id));
    return true;
  }

  /** notifications/cancelled naming a subscription (stdio; true: it was one, and it is closed). */
  cancel(id: unknown): boolean {
    const found = [...this.open].filter((s) => s.id === id);
    for (const s of found) this.open.delete(s);
    return found.length > 0;
  }

  /** The client of this exchange went away. */
  drop(exchange: ModernExchange): void {
    for (const s of this.open) if (s.exchange === exchange) this.open.delete(s);
  }

  /** Graceful close of every subscription (the session ends). */
  closeAll(): void {
    for (const s of this.open) s.exchange.answer({ jsonrpc: '2.0', id: s.id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_KEY]: s.id } } });
    this.open.clear();
  }
}
