/**
 * toolgate's answer to `server/discover` (MCP 2026-07-28), made from the upstream's initialize
 * answer as the internal session received it: the eras toolgate speaks, the upstream's
 * capabilities and instructions, toolgate as the server (it is what the client talks to) with the
 * upstream's own identity beside it, as untrusted data.
 */
import { isObject, type Json } from '../proxy/messages.js';
import { SERVER_INFO_KEY, SUPPORTED_VERSIONS, toolgateVersion } from './versions.js';

export const UPSTREAM_META_KEY = 'dev.toolgate/upstream';

/** The 2025 capabilities MCP 2026-07-28 dropped (tasks moved to an extension). */
const DROPPED_CAPABILITIES = ['tasks'];

export function discoverResult(initialized: Json, serverName: string): Json {
  const capabilities: Json = isObject(initialized.capabilities) ? { ...initialized.capabilities } : {};
  for (const key of DROPPED_CAPABILITIES) delete capabilities[key];
  const upstreamInfo = isObject(initialized.serverInfo) ? initialized.serverInfo : undefined;
  return {
    resultType: 'complete',
    // What the client may do depends on its grant's policy, which can change at any time.
    ttlMs: 0,
    cacheScope: 'private',
    supportedVersions: [...SUPPORTED_VERSIONS],
    capabilities,
    ...(typeof initialized.instructions === 'string' ? { instructions: initialized.instructions } : {}),
    _meta: {
      [SERVER_INFO_KEY]: { name: 'toolgate', title: `toolgate: ${serverName}`, version: toolgateVersion() },
      [UPSTREAM_META_KEY]: { server: serverName, ...(upstreamInfo ? { serverInfo: upstreamInfo } : {}) },
    },
  };
}
