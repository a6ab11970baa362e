const SECRET_KEY = /(token|passw(or)?d|passphrase|secret|api[-_]?key|private[-_]?key|(^|[-_])key$|^key|authorization|auth|cookie|credential|session[-_]?id|signature|bearer)/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
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
