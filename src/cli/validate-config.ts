import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { loadGatewayConfig } from '../config/gateway.js';
import { loadPolicyFile, type PolicyIssue } from '../policy/index.js';

/**
 * `toolgate policy validate toolgate.yaml`: a new user's first guess at checking a gateway
 * configuration. Read as a policy, it printed a wall of `unknown field "servers"`; a file shaped
 * like a configuration (a `servers` map, no policy `version` or `tools`) is checked as
 * `toolgate serve -c` would load it instead — the configuration, then each server's policy file.
 */
export function looksLikeGatewayConfig(file: string): boolean {
  let raw: unknown;
  try { raw = parseYaml(readFileSync(file, 'utf8')); } catch { return false; }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return false;
  const keys = Object.keys(raw);
  return keys.includes('servers') && !keys.includes('version') && !keys.includes('tools');
}

export interface ConfigReport {
  file: string;
  kind: 'gateway-config';
  valid: boolean;
  /** Problems, each with the file it is in (the configuration or a server's policy). */
  errors: (PolicyIssue & { file: string })[];
  servers: string[];
}

export function validateGatewayConfigFile(file: string): ConfigReport {
  const config = loadGatewayConfig(file);
  if (!config.ok) return { file, kind: 'gateway-config', valid: false, errors: config.issues.map((i) => ({ file, ...i })), servers: [] };
  const errors: ConfigReport['errors'] = [];
  const servers = Object.keys(config.value.servers);
  for (const name of servers) {
    const policy = config.value.servers[name].policy;
    if (policy === undefined) continue;
    const loaded = loadPolicyFile(policy);
    if (!loaded.ok) for (const issue of loaded.issues) errors.push({ file: policy, ...issue, message: `(server ${name}) ${issue.message}` });
  }
  return { file, kind: 'gateway-config', valid: errors.length === 0, errors, servers };
}
