import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Json } from './messages.js';
import type { Upstream } from './upstream.js';

/**
 * An SDK client transport as an `Upstream`, started at once (so the era adapter can start a
 * new one in place of a server that died on its probe): for tools that speak to a server
 * through the SDK's Client, such as `toolgate record` and `pin`.
 */
export function upstreamOf(transport: Transport): Upstream {
  const up: Upstream & { started: Promise<void> } = {
    started: transport.start(),
    send: async (message: Json) => {
      await up.started;
      await transport.send(message as JSONRPCMessage);
    },
    close: () => transport.close(),
  };
  up.started.catch(() => { /* reported by send and by the SDK's own errors */ });
  transport.onmessage = (m) => up.onmessage?.(m);
  transport.onclose = () => up.onclose?.('the server closed the connection');
  transport.onerror = () => { /* a failed send rejects; a dead server closes */ };
  return up;
}

/** An `Upstream` (the era adapter around a server) as an SDK client transport, for the SDK's Client. */
export function sdkTransport(up: Upstream): Transport {
  const transport: Transport = {
    start: async () => {
      up.onmessage = (m) => transport.onmessage?.(m as JSONRPCMessage);
      up.onclose = () => transport.onclose?.();
      await up.started;
    },
    send: (message) => up.send(message as unknown as Json),
    close: async () => {
      await up.close();
      transport.onclose?.();
    },
  };
  return transport;
}
