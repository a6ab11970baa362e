/**
 * The MCP protocol eras toolgate speaks to its clients (SPEC section 10): the 2025 revisions, with
 * an initialize handshake and sessions, and 2026-07-28, stateless, where every request carries
 * its version, capabilities and client info in `_meta`. Shared constants for every era adapter.
 */
import { readFileSync } from 'node:fs';
import {
  HEADER_MISMATCH, MODERN_VERSION, UNSUPPORTED_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES as CLIENT_CAPABILITIES_KEY,
  META_CLIENT_INFO as CLIENT_INFO_KEY, META_LOG_LEVEL as LOG_LEVEL_KEY, META_PROTOCOL_VERSION as PROTOCOL_VERSION_KEY,
  META_SERVER_INFO as SERVER_INFO_KEY,
} from '../proxy/upstream-modern-wire.js';

// One definition of the 2026-07-28 wire's names, shared with the modern-upstream adapter (the room below).
export { CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, HEADER_MISMATCH, LOG_LEVEL_KEY, MODERN_VERSION, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY, UNSUPPORTED_PROTOCOL_VERSION };
/** The 2025-era revisions a legacy client may initialize with (newest first). */
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;
/** The modern revisions toolgate speaks (a client pinned to another one is refused with -32022). */
export const MODERN_VERSIONS = [MODERN_VERSION] as const;
/** Every revision toolgate speaks, newest first: `supportedVersions` of its server/discover answer. */
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];
/** The version the internal (policy) session is opened with for a modern client. */
export const INTERNAL_VERSION = '2025-11-25';

/** MissingRequiredClientCapability: a request needs a client capability the request did not declare. */
export const MISSING_CLIENT_CAPABILITY = -32021;
const METHOD_NOT_FOUND = -32601;

/**
 * The HTTP status of a 2026-07-28 POST answered with a plain JSON-RPC error, as the revision (and SDK
 * v2's transport) sets it: a method this endpoint does not serve (including the methods the revision
 * removed: initialize, ping, logging/setLevel, resources/(un)subscribe) is 404, a missing client
 * capability 400; every other error stays in-band on 200. Through toolgate the endpoint serves what
 * its upstream serves, so an upstream's -32601 is this endpoint's 404 too.
 */
export function httpStatusForError(code: unknown): number {
  if (code === METHOD_NOT_FOUND) return 404;
  if (code === MISSING_CLIENT_CAPABILITY) return 400;
  return 200;
}

export const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

/** A revision date as MCP writes them. */
export function isRevision(v: unknown): v is string {
  return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v);
}

/** 2026-07-28 and every later revision are stateless ("modern"); earlier ones have sessions. */
export function isModernVersion(v: unknown): boolean {
  return isRevision(v) && v >= MODERN_VERSION;
}

let ownVersion: string | undefined;
/** toolgate's own version (package.json), for the serverInfo it gives modern clients. */
export function toolgateVersion(): string {
  if (ownVersion === undefined) {
    try {
      ownVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      ownVersion = '0.0.0';
    }
  }
  return ownVersion;
}
