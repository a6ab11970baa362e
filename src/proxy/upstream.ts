import type { Json } from './messages.js';

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
  /** Resolves once the upstream runs; rejects, with a reason to show, when it could not be started. */
  readonly started?: Promise<void>;
}

/** A send that certainly never reached the server (not connected, refused): a call's reservation can be given back. */
export class NotDelivered extends Error {}
