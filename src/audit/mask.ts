const SECRET_WORDS = new Set([
  'token', 'tokens', 'password', 'passwd', 'pwd', 'passphrase', 'secret', 'secrets', 'key', 'keys', 'apikey',
  'authorization', 'auth', 'cookie', 'cookies', 'credential', 'credentials', 'signature', 'bearer', 'otp', 'pin', 'sessionid',
]);

/** Splits snake_case, kebab-case, dotted and camelCase keys into lower-case words. */
function words(key: string): string[] {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
}

/** A key whose value should never be shown: token, password, api_key, clientSecret, Authorization, … */
export function isSecretKey(key: string): boolean {
  return words(key).some((w) => SECRET_WORDS.has(w)) || SECRET_WORDS.has(key.toLowerCase().replace(/[^a-z]/g, ''));
}

/** A copy of a JSON value with the values of secret-looking keys replaced by "***". */
export function maskSecrets(value: unknown, depth = 0): unknown {
  if (depth > 32) return '…';
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = isSecretKey(k) ? '***' : maskSecrets(v, depth + 1);
    return out;
  }
  return value;
}
