/**
 * A field whose value is a secret whatever it looks like. The name is split into words at
 * camelCase boundaries and at anything but letters and digits, lower-cased; it is a secret field
 * when its words end with one of: password, passwd, passphrase, secret, token, authorization,
 * api key, private key, access key, secret key (or apikey, privatekey, accesskey, secretkey as
 * one word). `apiKey`, `api-key`, `client_secret`, `access_token`, `X-Api-Key`, `DB_PASSWORD`
 * count; `key`, `pin`, `auth`, `signature`, `otp`, `tokens`, `max_tokens`, `token_count`,
 * `secret_name` alone mask nothing.
 */
export function isSecretField(name: string): boolean {
  const words = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2').toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  const last = words[words.length - 1];
  if (last === undefined) return false;
  if (SECRET_WORDS.has(last)) return true;
  return last === 'key' && words.length > 1 && KEY_QUALIFIERS.has(words[words.length - 2]);
}

const SECRET_WORDS = new Set(['password', 'passwd', 'passphrase', 'secret', 'token', 'authorization', 'apikey', 'privatekey', 'accesskey', 'secretkey']);
const KEY_QUALIFIERS = new Set(['api', 'private', 'access', 'secret']);
