import { findSecrets, isSecretField, maskText } from './index.js';

/**
 * Credentials in how a server is reached — a command line's arguments, a URL — masked where that
 * is shown or stored (server records, the catalog, the admin API and dashboard, CLI output, error
 * text, toolgate's own process title). What is masked, in order:
 *
 * - a URL's userinfo: its password (or the user alone, when it has no password: a token as user);
 * - every value of a URL's query string (where hosted servers take their keys);
 * - `--name=value`, `NAME=value` and `Name: value` whose name `isSecretField` reads as a secret,
 *   and the argument after `--name` when that name does (`--api-key KEY`);
 * - any span the secret detector (`findSecrets`) finds in what is left.
 *
 * Each result also lists the original text of every masked part (as written, and decoded where it
 * was percent-encoded), so a caller can scrub it wherever else a server echoes it.
 */

export const MASK = '[masked]';

export interface Masked<T> {
  value: T;
  /** The original text of every masked part: empty when nothing was masked. */
  found: string[];
}

const URL_IN_TEXT = /\b[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>`]+/g;
const URL_PARTS = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)(?:([^/?#@]*)@)?([^?#]*)(\?[^#]*)?(#.*)?$/s;

function decoded(text: string): string {
  try { return decodeURIComponent(text.replace(/\+/g, ' ')); } catch { return text; }
}

function collect(found: string[], raw: string): void {
  if (!raw || raw === MASK) return;
  found.push(raw);
  const plain = decoded(raw);
  if (plain !== raw) found.push(plain);
}

/** Secret-looking spans in `text` masked by shape (as `maskSecretSpans` does), the originals collected. */
function maskSpans(text: string, found: string[]): string {
  const spans = findSecrets(text);
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + maskText(s.kind);
    collect(found, text.slice(s.start, s.end));
    at = s.end;
  }
  return out + text.slice(at);
}

/** One URL with its userinfo and query values masked, and any secret-shaped span in the rest. */
export function maskUrl(url: string): Masked<string> {
  const found: string[] = [];
  const m = URL_PARTS.exec(url);
  if (!m) return { value: maskSpans(url, found), found };
  const [, scheme, userinfo, rest, query, fragment] = m;
  let out = scheme;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    if (colon >= 0) {
      collect(found, userinfo.slice(colon + 1));
      out += `${userinfo.slice(0, colon)}:${MASK}@`;
    } else {
      collect(found, userinfo);
      out += `${MASK}@`;
    }
  }
  out += maskSpans(rest, found);
  if (query !== undefined) {
    out += '?' + query.slice(1).split('&').map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0 || eq === pair.length - 1) return pair;
      collect(found, pair.slice(eq + 1));
      return `${pair.slice(0, eq)}=${MASK}`;
    }).join('&');
  }
  if (fragment !== undefined) out += maskSpans(fragment, found);
  return { value: out, found };
}

/** Every URL inside `text` (an error message, a log line) masked as `maskUrl` does. */
export function maskUrlsIn(text: string): string {
  return text.replace(URL_IN_TEXT, (url) => maskUrl(url).value);
}

const NAMED = /^(-{0,2})([A-Za-z_][\w.-]*)(=|:\s*)([^]+)$/;
const FLAG = /^-{1,2}([A-Za-z][\w.-]*)$/;

/** A command line's arguments with their credentials masked. */
export function maskArgs(args: readonly string[]): Masked<string[]> {
  const found: string[] = [];
  const out = args.map((arg, i) => {
    const flag = i > 0 ? FLAG.exec(args[i - 1]) : null;
    if (flag && isSecretField(flag[1]) && !arg.startsWith('-')) {
      collect(found, arg);
      return MASK;
    }
    const named = NAMED.exec(arg);
    if (named && isSecretField(named[2])) {
      collect(found, named[4]);
      return `${named[1]}${named[2]}${named[3]}${MASK}`;
    }
    const urls = arg.replace(URL_IN_TEXT, (url) => {
      const masked = maskUrl(url);
      found.push(...masked.found);
      return masked.value;
    });
    return maskSpans(urls, found);
  });
  return { value: out, found: [...new Set(found)] };
}
