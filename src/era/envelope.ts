/**
 * The per-request `_meta` envelope of MCP 2026-07-28: every request names its protocol version and
 * the client's capabilities (and, optionally, the client's identity and a log level). Read here,
 * without trusting its shape, into what the internal session needs.
 */
import { INVALID_PARAMS, isObject, type Json } from '../proxy/messages.js';
import {
  CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, MODERN_VERSIONS, PROTOCOL_VERSION_KEY,
  SUPPORTED_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION,
} from './versions.js';

export interface Envelope {
  version: string;
  capabilities: Json;
  clientInfo?: { name: string; version: string } & Json;
}

/** A JSON-RPC error to answer a request with (and, on HTTP, its status). */
export interface Refusal {
  code: number;
  message: string;
  data?: Json;
}

const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

function metaOf(params: unknown): Json | undefined {
  return isObject(params) && isObject(params._meta) ? params._meta : undefined;
}

/** The request claims the per-request envelope (it names a protocol version in `_meta`). */
export function hasEnvelopeClaim(params: unknown): boolean {
  const meta = metaOf(params);
  return meta !== undefined && Object.hasOwn(meta, PROTOCOL_VERSION_KEY);
}

/** The version the request's envelope names, when it names one as a string. */
export function claimedVersion(params: unknown): string | undefined {
  const v = metaOf(params)?.[PROTOCOL_VERSION_KEY];
  return typeof v === 'string' ? v : undefined;
}

function invalid(message: string, key: string): Refusal {
  return { code: INVALID_PARAMS, message: `Invalid params: ${message}`, data: { envelope: { key } } };
}

/**
 * The request's envelope, or why it is refused: -32602 when a required key is missing or
 * malformed, -32022 (with the versions toolgate speaks in `data.supported`) when it names a
 * version toolgate does not speak as a stateless revision.
 */
export function readEnvelope(params: unknown): Envelope | Refusal {
  const meta = metaOf(params);
  if (!meta) return invalid(`the request is missing the _meta envelope MCP ${MODERN_VERSIONS[0]} requires (${PROTOCOL_VERSION_KEY}, ${CLIENT_CAPABILITIES_KEY})`, '_meta');
  const version = meta[PROTOCOL_VERSION_KEY];
  if (typeof version !== 'string') return invalid(`_meta["${PROTOCOL_VERSION_KEY}"] must be a protocol version string`, PROTOCOL_VERSION_KEY);
  const capabilities = meta[CLIENT_CAPABILITIES_KEY];
  if (!isObject(capabilities)) return invalid(`_meta["${CLIENT_CAPABILITIES_KEY}"] must be an object`, CLIENT_CAPABILITIES_KEY);
  const info = meta[CLIENT_INFO_KEY];
  if (info !== undefined && !(isObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) {
    return invalid(`_meta["${CLIENT_INFO_KEY}"] must be an object with name and version strings`, CLIENT_INFO_KEY);
  }
  const level = meta[LOG_LEVEL_KEY];
  if (level !== undefined && !LOG_LEVELS.includes(level as string)) return invalid(`_meta["${LOG_LEVEL_KEY}"] must be a log level`, LOG_LEVEL_KEY);
  if (!(MODERN_VERSIONS as readonly string[]).includes(version)) {
    return {
      code: UNSUPPORTED_PROTOCOL_VERSION,
      message: `Unsupported protocol version: ${JSON.stringify(version).slice(0, 80)} (supported versions: ${SUPPORTED_VERSIONS.join(', ')}; the 2025 revisions start with initialize)`,
      data: { supported: [...SUPPORTED_VERSIONS], requested: version.slice(0, 80) },
    };
  }
  return { version, capabilities, clientInfo: info as Envelope['clientInfo'] };
}

export function isRefusal(e: Envelope | Refusal): e is Refusal {
  return Object.hasOwn(e, 'code');
}
