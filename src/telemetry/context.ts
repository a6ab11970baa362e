import type { IncomingHttpHeaders } from 'node:http';
import type { TraceCarrier } from './types.js';

/** A parsed W3C traceparent: https://www.w3.org/TR/trace-context/#traceparent-header */
export interface ParentContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  tracestate?: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** tracestate: list members of printable ASCII, at most 512 characters (W3C's limit for propagation). */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/**
 * The parent a traceparent names, or undefined when it is not a valid one (W3C: version ff is
 * invalid, version 00 has nothing after the flags, the ids are not all zeros). Untrusted input:
 * only its ids and flags are kept.
 */
export function parseTraceparent(traceparent: unknown, tracestate?: unknown): ParentContext | undefined {
  if (typeof traceparent !== 'string' || traceparent.length > 256) return undefined;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  const state = typeof tracestate === 'string' && TRACESTATE.test(tracestate) ? tracestate : undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16), tracestate: state };
}

export function formatTraceparent(traceId: string, spanId: string, traceFlags: number): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The trace context headers of an HTTP request, when it has a traceparent. */
export function httpCarrier(headers: IncomingHttpHeaders): TraceCarrier | undefined {
  const traceparent = headers.traceparent;
  if (typeof traceparent !== 'string') return undefined;
  const tracestate = headers.tracestate;
  return { traceparent, tracestate: Array.isArray(tracestate) ? tracestate.join(',') : tracestate };
}

/**
 * The parent of a request: its `params._meta.traceparent` (the 2026-07-28 convention, also what
 * a stdio client can send), else the HTTP request's traceparent.
 */
export function requestParent(params: unknown, http: TraceCarrier | undefined): ParentContext | undefined {
  if (params !== null && typeof params === 'object' && !Array.isArray(params)) {
    const meta = (params as { _meta?: unknown })._meta;
    if (meta !== null && typeof meta === 'object' && !Array.isArray(meta)) {
      const { traceparent, tracestate } = meta as { traceparent?: unknown; tracestate?: unknown };
      const parent = parseTraceparent(traceparent, tracestate);
      if (parent) return parent;
    }
  }
  return http ? parseTraceparent(http.traceparent, http.tracestate) : undefined;
}
