import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../log.js';
import { BatchReplies } from '../proxy/batches.js';
import type { PolicySession } from '../proxy/session.js';
import type { TraceCarrier } from '../telemetry/index.js';
import type { ClientChannel } from './streamable.js';

/**
 * The legacy HTTP+SSE transport's side of a session: messages for the client are events on its
 * stream; the answers to a batch (MCP 2025-03-26) go as one event holding them all.
 */
export function sseChannel(transport: SSEServerTransport, log: Logger): ClientChannel {
  const replies = new BatchReplies((m) => {
    transport.send(m as JSONRPCMessage).catch((err: Error) => log.debug({ err: err.message }, 'a message for a closed stream was dropped'));
  });
  return {
    send: (m, raw) => replies.deliver(m, raw),
    expectBatch: (batch) => replies.expect(batch),
    close: () => transport.close(),
  };
}

/**
 * A POST to the message endpoint. A batch goes to the session, which accepts it or refuses it
 * whole by the negotiated protocol version, answering on the stream like any message; the SDK's
 * transport takes single messages only.
 */
export async function postSse(transport: SSEServerTransport, session: PolicySession, req: IncomingMessage, res: ServerResponse, body: unknown, http?: TraceCarrier): Promise<void> {
  if (!Array.isArray(body)) return transport.handlePostMessage(req, res, body);
  res.writeHead(202).end('Accepted');
  session.fromClient(body, http);
}
