import type { Id, Json } from './messages.js';

/** Where a session's messages go: a child process, or a remote Streamable HTTP or SSE server. */
export interface Upstream {
  /**
   * Resolves when handed over; rejects when the message could not be delivered, with
   * `NotDelivered` when it certainly never reached the server.
   */
  send(message: Json): Promise<void>;
  /** `raw` is the message's own JSON text when the transport has it (stdio), to pass on unchanged. */
  onmessage?: (message: unknown, raw?: string) => void;
  /** The upstream is gone for good (process exited, connection failed). */
  onclose?: (reason: string) => void;
  close(): Promise<void>;
  /** Takes a request not yet sent out of the transport's queue (a pool's); true when it was, so it is never sent. */
  withdraw?(id: Id): boolean;
  /** Resolves once the upstream runs; rejects, with a reason to show, when it could not be started. */
  readonly started?: Promise<void>;
}

/** A send that certainly never reached the server (not connected, refused): a call's reservation can be given back. */
export class NotDelivered extends Error {}

/** A send refused before it reached the server, with the JSON-RPC error its request gets (e.g. a pool exhausted). */
export class Refused extends NotDelivered {
  constructor(message: string, readonly code: number, readonly data?: Json) {
    super(message);
  }
}
