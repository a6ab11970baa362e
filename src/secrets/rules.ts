import { EXTRA_RULES } from './extra-rules.js';
import { ALNUM, charClass, entropyBits, hidesSomething, LETTER, SPACE, UPPER_DIGIT, WORD, type CharClass, type Scanner } from './scan.js';

export type SecretKind =
  | 'aws_access_key_id' | 'google_api_key' | 'azure_account_key'
  | 'github_token' | 'gitlab_token' | 'slack_token' | 'slack_webhook' | 'stripe_key' | 'npm_token' | 'openai_key'
  | 'private_key' | 'jwt' | 'connection_password' | 'bearer_token' | 'basic_credentials' | 'env_secret' | 'quoted_secret'
  | 'discord_webhook' | 'telegram_bot_token' | 'huggingface_token';

/** What a rule found: the secret is text.slice(start, end). */
export interface Hit {
  start: number;
  end: number;
}

/**
 * One kind of secret: the literals that set it off (matched case-insensitively by the one pass
 * that finds candidates; the rule checks case itself where it matters) and a matcher that, given
 * where a literal starts, reads a bounded shape forward (and back over a name) with the scanner.
 */
export interface Rule {
  kind: SecretKind;
  triggers: readonly string[];
  /** The rule needs a word boundary before its trigger (`\b`): the search skips the others. */
  boundary?: boolean;
  match(s: Scanner, at: number, literal: string): Hit | null;
}

const URLSAFE = charClass('A-Za-z0-9_-');
const ALNUM_DASH = charClass('A-Za-z0-9-');
const B64 = charClass('A-Za-z0-9+/');
const B64_LINE = charClass('A-Za-z0-9+/=');
const SLACK_PATH = charClass('A-Za-z0-9_/');
const SCHEME = charClass('A-Za-z0-9+.-');
const USERINFO_STOP = charClass(' \t\n\f\r:/@"\'<>');
const URL_PASSWORD = charClass('A-Za-z0-9._~%+=-');
/** RFC 6750's b64token (without its trailing `=`s): what a bearer token is made of. */
const BEARER = charClass('A-Za-z0-9._~+/-');
/** A value named secret by its name: no whitespace, quotes, backslash or shell syntax (`$ ; | & < > ( ) { } \``). */
const VALUE = charClass('A-Za-z0-9._~+/=%:@!#^*,-');
const ENV_NAME = charClass('A-Z0-9_');
const JSON_NAME = charClass('A-Za-z0-9_.-');
const HEADER_NAME = charClass('A-Za-z-');
const HEADER_VALUE = charClass('A-Za-z0-9,-');
const UPPER = charClass('A-Z');
/** Longer than this, a value found only by its name or a `Bearer`/`Basic` word is shown, not masked: a secret is not a page long, and a bound keeps every candidate cheap. */
export const MAX_GENERIC = 2048;

/** `prefix` (exact case, after a word boundary) and a run of `cls` at least `min` long: the whole of it. */
function prefixed(kind: SecretKind, prefixes: readonly string[], cls: CharClass, min: number, opts: { exact?: number; boundaryAfter?: boolean } = {}): Rule {
  return {
    kind, triggers: prefixes, boundary: true,
    match(s, at) {
      const prefix = prefixes.find((p) => s.at(at, p));
      if (!prefix || !s.boundaryBefore(at)) return null;
      const from = at + prefix.length;
      let end = s.runEnd(cls, from);
      if (end - from < min) return null;
      if (opts.exact !== undefined) {
        end = from + opts.exact;
        if (opts.boundaryAfter && s.is(WORD, end)) return null;
      }
      return { start: at, end };
    },
  };
}

/** Skips an end of line: `\r\n`, `\n`, or the two characters `\n` of an escaped string. */
function lineEnd(s: Scanner, i: number): number {
  if (s.at(i, '\n')) return i + 1;
  if (s.at(i, '\r\n')) return i + 2;
  if (s.at(i, '\\n')) return i + 2;
  return -1;
}

/** `BEGIN|END ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----` from `i`: where it ends, or -1. At most 200 characters. */
function keyLabel(s: Scanner, i: number): number {
  const limit = i + 200;
  while (i < limit) {
    if (s.at(i, 'PRIVATE KEY')) {
      let e = i + 11;
      if (s.at(e, ' BLOCK')) e += 6;
      if (s.at(e, '-----')) return e + 5;
    }
    const w = s.runEnd(UPPER_DIGIT, i);
    if (w === i || !s.at(w, ' ')) return -1;
    i = w + 1;
  }
  return -1;
}

/** Where the line before the one starting at `i` ends (at its `\n`, `\r\n` or escaped `\n`), or -1. */
function lineEndBefore(s: Scanner, i: number): number {
  if (i >= 2 && s.at(i - 2, '\r\n')) return i - 2;
  if (i >= 1 && s.at(i - 1, '\n')) return i - 1;
  if (i >= 2 && s.at(i - 2, '\\n')) return i - 2;
  return -1;
}

/**
 * The tail of a key whose BEGIN line went elsewhere (split across content blocks): whole base64
 * lines right before `-----END … PRIVATE KEY-----`, 16 characters or more of them, from the start
 * of the first. Each line is read once (its run is the scanner's), so this stays linear.
 */
function keyTail(s: Scanner, at: number): Hit | null {
  const end = keyLabel(s, at + 9);
  if (end < 0) return null;
  let start = at;
  for (;;) {
    const le = lineEndBefore(s, start);
    if (le < 0) break;
    let ls = s.runStart(B64_LINE, le);
    // An escaped `\n` before the line: its `n` is a base64 character, not the line's.
    if (ls > 0 && s.at(ls - 1, '\\') && s.at(ls, 'n')) ls++;
    const lineStart = ls === 0 || lineEndBefore(s, ls) >= 0;
    if (ls === le || !lineStart) break;
    start = ls;
  }
  return at - start >= 16 ? { start, end } : null;
}

const privateKey: Rule = {
  kind: 'private_key', triggers: ['-----BEGIN ', '-----END '],
  match(s, at) {
    if (s.at(at, '-----END ')) return keyTail(s, at);
    if (!s.at(at, '-----BEGIN ')) return null;
    const header = keyLabel(s, at + 11);
    if (header < 0) return null;
    // A header alone (the text was cut after it, or the key goes on in another block) is masked too.
    let i = lineEnd(s, header);
    if (i < 0) return { start: at, end: header };
    // Header lines (Proc-Type: 4,ENCRYPTED), an optional blank line, base64 lines, then END.
    for (;;) {
      const n = s.runEnd(HEADER_NAME, i);
      if (n === i || !s.at(n, ': ')) break;
      const v = s.runEnd(HEADER_VALUE, n + 2);
      const next = v > n + 2 ? lineEnd(s, v) : -1;
      if (next < 0) break;
      i = next;
    }
    const blank = lineEnd(s, i);
    if (blank >= 0) i = blank;
    const body = i;
    for (;;) {
      const e = s.runEnd(B64_LINE, i);
      const next = e > i ? lineEnd(s, e) : -1;
      if (next < 0) break;
      i = next;
    }
    const end = s.at(i, '-----END ') ? keyLabel(s, i + 9) : -1;
    if (end >= 0) return { start: at, end };
    // Without its END line (cut short, or split across content blocks) the key is still a key:
    // masked from the header to the end of the base64 that follows, a last line cut at the end of
    // the text included. What follows must read as a key's body (a first line of 16 or more
    // base64 characters), so a header before a command (`rm -rf /`) hides nothing.
    const tail = s.runEnd(B64_LINE, i);
    const stop = tail === s.text.length ? tail : i;
    if (stop === s.text.length && s.runEnd(B64_LINE, body) === body) return { start: at, end: stop };
    return s.runEnd(B64_LINE, body) - body >= 16 ? { start: at, end: stop } : null;
  },
};

const aws: Rule = {
  kind: 'aws_access_key_id', triggers: ['AKIA', 'ASIA', 'ABIA', 'ACCA', 'A3T'], boundary: true,
  match(s, at) {
    if (!s.boundaryBefore(at)) return null;
    let from: number;
    if (s.at(at, 'A3T')) {
      if (!s.is(UPPER_DIGIT, at + 3)) return null;
      from = at + 4;
    } else if (['AKIA', 'ASIA', 'ABIA', 'ACCA'].some((p) => s.at(at, p))) {
      from = at + 4;
    } else return null;
    const end = from + 16;
    return s.runEnd(UPPER_DIGIT, from) >= end && !s.is(WORD, end) ? { start: at, end } : null;
  },
};

const azure: Rule = {
  kind: 'azure_account_key', triggers: ['AccountKey=', 'SharedAccessKey='], boundary: true,
  match(s, at, literal) {
    if (!s.boundaryBefore(at)) return null;
    const from = at + literal.length;
    const run = s.runEnd(B64, from);
    if (run - from < 20) return null;
    let end = run;
    while (s.at(end, '=')) end++;
    return { start: from, end };
  },
};

const slackToken: Rule = {
  kind: 'slack_token', triggers: ['xox'], boundary: true,
  match(s, at) {
    if (!s.at(at, 'xox') || !s.boundaryBefore(at) || !'abposre'.includes(s.text[at + 3] ?? ' ') || !s.at(at + 4, '-')) return null;
    const end = s.runEnd(ALNUM_DASH, at + 5);
    return end - (at + 5) >= 10 ? { start: at, end } : null;
  },
};

const slackWebhook: Rule = {
  kind: 'slack_webhook', triggers: ['hooks.slack.com/'],
  match(s, at) {
    const path = ['hooks.slack.com/services/', 'hooks.slack.com/workflows/'].find((p) => s.at(at, p));
    if (!path) return null;
    const from = at + path.length;
    const end = s.runEnd(SLACK_PATH, from);
    return end - from >= 20 ? { start: from, end } : null;
  },
};

const stripe = prefixed('stripe_key', ['sk_live_', 'sk_test_', 'rk_live_', 'rk_test_'], ALNUM, 16);
const stripeWebhook = prefixed('stripe_key', ['whsec_'], ALNUM, 24);

const jwt: Rule = {
  kind: 'jwt', triggers: ['eyJ'], boundary: true,
  match(s, at) {
    if (!s.at(at, 'eyJ') || !s.boundaryBefore(at)) return null;
    const one = s.runEnd(URLSAFE, at + 3);
    if (one - (at + 3) < 5 || !s.at(one, '.eyJ')) return null;
    const two = s.runEnd(URLSAFE, one + 4);
    if (two - (one + 4) < 5 || !s.at(two, '.')) return null;
    return { start: at, end: s.runEnd(URLSAFE, two + 1) };
  },
};

/** scheme://user:PASSWORD@host: only the password, of the characters a password in a URL has. */
const connectionPassword: Rule = {
  kind: 'connection_password', triggers: ['://'],
  match(s, at) {
    // A scheme before: a letter after a word boundary, then scheme characters up to "://".
    const from = s.runStart(SCHEME, at);
    let scheme = false;
    for (let i = from; i < at && !scheme; i++) scheme = s.is(LETTER, i) && s.boundaryBefore(i);
    if (!scheme) return null;
    const colon = s.runEndNot(USERINFO_STOP, at + 3);
    if (!s.at(colon, ':')) return null;
    const end = s.runEnd(URL_PASSWORD, colon + 1);
    return end > colon + 1 && s.at(end, '@') ? { start: colon + 1, end } : null;
  },
};


/**
 * `Bearer <token>`: a b64token of at least 8 characters and 24 bits of entropy (so `Bearer
 * password` or a word is not a token) that is not a path, URL or host.
 */
const bearer: Rule = {
  kind: 'bearer_token', triggers: ['bearer'], boundary: true,
  match(s, at, literal) {
    if (!s.atLower(at, literal) || !s.boundaryBefore(at)) return null;
    const gap = s.runEnd(SPACE, at + 6);
    if (gap === at + 6) return null;
    let end = s.runEnd(BEARER, gap);
    if (end - gap > MAX_GENERIC) return null;
    while (s.at(end, '=')) end++;
    if (end - gap < 8) return null;
    const value = s.text.slice(gap, end);
    if (hidesSomething(value) || entropyBits(value) < 24) return null;
    return { start: gap, end };
  },
};

/** `Basic <base64 of user:password>`: only a value that decodes to printable text with a colon. */
const basic: Rule = {
  kind: 'basic_credentials', triggers: ['basic'], boundary: true,
  match(s, at, literal) {
    if (!s.atLower(at, literal) || !s.boundaryBefore(at)) return null;
    const gap = s.runEnd(SPACE, at + 5);
    if (gap === at + 5) return null;
    const run = s.runEnd(B64, gap);
    if (run - gap > MAX_GENERIC) return null;
    let end = run;
    while (s.at(end, '=')) end++;
    const value = s.text.slice(gap, end);
    if (run - gap < 8 || value.startsWith('/') || (run - gap) % 4 === 1) return null;
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return /^[\x20-\x7e\u00a0-\uffef]*:[\x20-\x7e\u00a0-\uffef]*$/.test(decoded) && !decoded.includes('\ufffd') ? { start: gap, end } : null;
  },
};

/** After `=` (with a space around it and a quote before the value, as .env files and shells allow): the value, unless it would hide something. */
function assignedValue(s: Scanner, i: number): Hit | null {
  if (s.is(SPACE, i)) i++;
  if (!s.at(i, '=')) return null;
  i++;
  if (s.is(SPACE, i)) i++;
  if (s.at(i, '"') || s.at(i, "'")) i++;
  const end = s.runEnd(VALUE, i);
  return end > i && end - i <= MAX_GENERIC && !hidesSomething(s.text.slice(i, end)) ? { start: i, end } : null;
}

/** .env style: NAME_KEY=, NAME_SECRET=, NAME_TOKEN=, NAME_PASSWORD= (upper case, as such files are written). */
const envSecret: Rule = {
  kind: 'env_secret', triggers: ['_KEY', 'SECRET', 'TOKEN', 'PASSWORD', 'PASSWD'],
  match(s, at, literal) {
    if (!s.at(at, literal)) return null;
    const nameStart = s.runStart(ENV_NAME, at);
    if (!s.boundaryBefore(nameStart)) return null;
    if (literal === '_KEY' && (nameStart === at || !s.is(UPPER, nameStart))) return null;
    return assignedValue(s, at + literal.length);
  },
};

const QUOTED_WORDS = ['password', 'passwd', 'passphrase', 'secret', 'token', 'authorization'];
const KEY_QUALIFIERS = ['api', 'private', 'access', 'secret'];

/** JSON inside a string: "password": "…", "client_secret": "…", "api_key": "…" (names as isSecretField reads them). */
const quotedSecret: Rule = {
  kind: 'quoted_secret', triggers: [...QUOTED_WORDS.map((w) => `${w}"`), 'key"'],
  match(s, at, literal) {
    const word = literal.slice(0, -1).toLowerCase();
    if (word === 'key') {
      const sep = s.at(at - 1, '_') || s.at(at - 1, '-') ? 1 : 0;
      if (!KEY_QUALIFIERS.some((q) => at - sep - q.length >= 0 && s.atLower(at - sep - q.length, q))) return null;
    }
    const open = s.runStart(JSON_NAME, at) - 1;
    if (!s.at(open, '"')) return null;
    let i = s.runEnd(SPACE, at + literal.length);
    if (!s.at(i, ':')) return null;
    i = s.runEnd(SPACE, i + 1);
    if (!s.at(i, '"')) return null;
    const end = s.runEnd(VALUE, i + 1);
    return end > i + 1 && end - i - 1 <= MAX_GENERIC && s.at(end, '"') && !hidesSomething(s.text.slice(i + 1, end)) ? { start: i + 1, end } : null;
  },
};

export const RULES: readonly Rule[] = [
  privateKey, aws,
  prefixed('google_api_key', ['AIza'], URLSAFE, 35, { exact: 35 }),
  azure,
  prefixed('github_token', ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'], ALNUM, 36),
  prefixed('github_token', ['github_pat_'], WORD, 22),
  prefixed('gitlab_token', ['glpat-', 'gldt-', 'glrt-', 'glptt-', 'gloas-', 'glcbt-', 'glimt-', 'glft-', 'glsoat-', 'glagent-'], URLSAFE, 20),
  slackToken, slackWebhook, stripe, stripeWebhook,
  prefixed('npm_token', ['npm_'], ALNUM, 36, { exact: 36, boundaryAfter: true }),
  prefixed('openai_key', ['sk-'], URLSAFE, 20),
  jwt, connectionPassword, bearer, basic, envSecret, quotedSecret,
  ...EXTRA_RULES,
];
