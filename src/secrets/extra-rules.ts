import { ALNUM, charClass, hidesSomething, SPACE, type Scanner } from './scan.js';
import type { Rule } from './rules.js';

/**
 * Rules added for tool results (issue 27): lower- and mixed-case assignments (`password=…`,
 * `aws_secret_access_key = …`, `db_password: …`), chat webhooks and bot tokens, and Hugging Face
 * tokens. Each reads a bounded shape from its trigger, like the rules in rules.ts.
 */

const NAME = charClass('A-Za-z0-9_.-');
const VALUE = charClass('A-Za-z0-9._~+/=%:@!#^*,-');
const URLSAFE = charClass('A-Za-z0-9_-');
const DIGIT = charClass('0-9');
const QUOTE = charClass('"\'');
/** A longer name is not a setting's (and the bound keeps the name check cheap). */
const MAX_NAME = 128;
/** Longer than this, a value found only by its name is not a secret (and a bound keeps a candidate cheap). */
const MAX_VALUE = 2048;
/** A value found only by its name must be at least this long: `token: none`, `password: ****` are not secrets. */
const MIN_VALUE = 6;

const WORDS = ['password', 'passwd', 'passphrase', 'secret', 'token', 'key'];
const KEY_QUALIFIERS = ['api', 'private', 'access', 'secret'];
const LOWER = charClass('a-z');
const UPPER = charClass('A-Z');
const ALNUM_ONLY = charClass('A-Za-z0-9');
const LOWER_DIGIT = charClass('a-z0-9');

/** Whether a word of a name starts at `i`, as `isSecretField` splits names: after a non-alphanumeric, at `aB`, `1B`, and at `B` in `ABc`. */
function wordStart(s: Scanner, i: number, nameStart: number): boolean {
  if (i <= nameStart || !s.is(ALNUM_ONLY, i - 1)) return true;
  if (!s.is(UPPER, i)) return false;
  return s.is(LOWER_DIGIT, i - 1) || (s.is(UPPER, i - 1) && s.is(LOWER, i + 1));
}

/**
 * Whether the name from `nameStart` to the end of the trigger at `at` is a secret field as
 * `isSecretField` reads it — its last word is `word`, or `key` after api, private, access or
 * secret (`api_key`, `apiKey`, `APIKEY`) — in a bounded number of steps, without building words.
 */
function secretName(s: Scanner, nameStart: number, at: number, word: string): boolean {
  if (word !== 'key') return wordStart(s, at, nameStart);
  let j = at;
  while (j > nameStart && at - j < 8 && !s.is(ALNUM_ONLY, j - 1)) j--;
  if (j < at - 7) return false;
  // Joined (`apikey`: no word starts at the trigger) or a word of its own (`api_key`, `apiKey`).
  if (j === at && !wordStart(s, at, nameStart) && !KEY_QUALIFIERS.some((q) => s.atLower(at - q.length, q))) return false;
  return KEY_QUALIFIERS.some((q) => j - q.length >= nameStart && s.atLower(j - q.length, q) && wordStart(s, j - q.length, nameStart));
}

/**
 * `name = value` or `name: value` where the name, in any case, reads as a secret field
 * (`secretName`, as `isSecretField` reads names: `password`, `client_secret`, `aws_secret_access_key`, `apiKey`, …), as
 * config files, YAML and logs write them. The value is unquoted or opens with a quote; it is not
 * masked when it would hide a path, URL or host, or is shorter than MIN_VALUE.
 */
const assignment: Rule = {
  kind: 'env_secret', triggers: WORDS,
  match(s, at, literal) {
    const after = at + literal.length;
    if (s.is(NAME, after)) return null; // the word must end the name: `tokens`, `keyboard` are not
    const nameStart = s.runStart(NAME, at);
    if (after - nameStart > MAX_NAME || s.is(QUOTE, nameStart - 1)) return null; // quoted names are quotedSecret's
    if (!secretName(s, nameStart, at, literal.toLowerCase())) return null;
    let i = s.runEnd(SPACE, after);
    if (i - after > 2 || !(s.at(i, '=') || s.at(i, ':'))) return null;
    if (s.at(i, ':') && s.at(i + 1, '/')) return null; // a URL's scheme, not an assignment
    i = s.runEnd(SPACE, i + 1);
    if (s.at(i, '"') || s.at(i, "'")) i++;
    const end = s.runEnd(VALUE, i);
    if (end - i < MIN_VALUE || end - i > MAX_VALUE) return null;
    const value = s.text.slice(i, end);
    // `******` or `----` is a placeholder: a secret has letters or digits.
    return !/[A-Za-z0-9]/.test(value) || hidesSomething(value) ? null : { start: i, end };
  },
};

/** discord.com/api/webhooks/<id>/<token>: the id and token. */
const discordWebhook: Rule = {
  kind: 'discord_webhook', triggers: ['discord.com/api/webhooks/', 'discordapp.com/api/webhooks/'],
  match(s, at, literal) {
    if (!s.atLower(at, literal.toLowerCase())) return null;
    const from = at + literal.length;
    const id = s.runEnd(DIGIT, from);
    if (id - from < 10 || !s.at(id, '/')) return null;
    const end = s.runEnd(URLSAFE, id + 1);
    return end - (id + 1) >= 40 ? { start: from, end } : null;
  },
};

/** A Telegram bot token, `<bot id>:AA<33 characters>`. */
const telegramBot: Rule = {
  kind: 'telegram_bot_token', triggers: [':AA'],
  match(s, at) {
    if (!s.at(at, ':AA')) return null;
    const start = s.runStart(DIGIT, at);
    if (at - start < 8 || at - start > 10 || !s.boundaryBefore(start)) return null;
    const end = s.runEnd(URLSAFE, at + 1);
    return end - (at + 1) === 35 ? { start, end } : null;
  },
};

/** A Hugging Face token, `hf_` and 34 letters and digits. */
const huggingFace: Rule = {
  kind: 'huggingface_token', triggers: ['hf_'], boundary: true,
  match(s, at) {
    if (!s.at(at, 'hf_') || !s.boundaryBefore(at)) return null;
    const end = s.runEnd(ALNUM, at + 3);
    return end - (at + 3) >= 34 && end - (at + 3) <= 40 && !s.is(URLSAFE, end) ? { start: at, end } : null;
  },
};

export const EXTRA_RULES: readonly Rule[] = [assignment, discordWebhook, telegramBot, huggingFace];
