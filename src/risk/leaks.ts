import type { Category, Classification, ToolDefinition } from './types.js';
import { nameWords } from './words.js';

/**
 * Refinements of the recommended rule by what a tool leaks (SPEC section 5: "some reads are how
 * secrets leave"). Each names the attack pattern it blunts, and the tool record cites it.
 */
export interface Refinement {
  id: 'returns-secrets' | 'fetches-url';
  /** The attack pattern in src/risk/attacks.ts. */
  attack: 'credential-leak' | 'ssrf';
  /** One sentence for the record: what was seen and what the rule does about it. */
  says: string;
  /** For a URL fetch: the argument paths the deny_if checks. */
  paths?: string[];
}

const SECRET_NAME = /\b(env|environ|environment|secrets?|credentials?|passwords?|passwd|apikeys?|api keys?|private keys?|access tokens?|auth tokens?|bearer tokens?|refresh tokens?|ssh keys?|keychain|dotenv)\b/;
const RETURNS_SECRETS = /\b(returns?|reads?|lists?|shows?|prints?|gets?|retrieves?|dumps?|exposes?|reveals?|outputs?|fetch(?:es)?)\b[^.]{0,60}\b(environment variables?|env vars?|process environment|secrets?|credentials?|api keys?|passwords?|private keys?|connection strings?|(?:access|auth|api|bearer|refresh|session) tokens?)\b/;
const URL_NAME = /^(url|uri|href|link|endpoint|target|website|page_?url|target_?url|source_?url|[a-z]+_url|[a-z]+Url|[a-z]+_uri|urls|links|uris)$/;
const FETCHES = /\b(fetch|scrape|crawl|download|navigate|open|visit|browse|request|load|retrieve|read|get|extract|screenshot|render|curl|http|proxy|ping|check|capture|convert|summari[sz]e|analy[sz]e)\w*/;

type Schema = { type?: unknown; format?: unknown; items?: Schema; properties?: Record<string, Schema> };

/** The argument paths of a tool's URL parameters (`args.url`, `args.urls[*]`), top level only. */
function urlArguments(tool: ToolDefinition): string[] {
  const props = (tool.inputSchema as Schema | undefined)?.properties;
  if (!props || typeof props !== 'object') return [];
  const out: string[] = [];
  for (const [name, s] of Object.entries(props)) {
    if (!s || typeof s !== 'object') continue;
    const isString = (x: Schema | undefined) => x?.type === 'string' || (Array.isArray(x?.type) && (x.type as unknown[]).includes('string'));
    const urlish = URL_NAME.test(name) || s.format === 'uri' || s.items?.format === 'uri' || /^(?:the )?urls?\b/i.test(String((s as { description?: unknown }).description ?? ''));
    if (!urlish) continue;
    if (isString(s)) out.push(`args.${name}`);
    else if (s.type === 'array' && isString(s.items)) out.push(`args.${name}[*]`);
  }
  return out;
}

const RETURNS_SECRETS_ALL = new RegExp(RETURNS_SECRETS.source, 'g');
/** The credential is how the call reads, not what it returns: "accessible with current credentials", "attached to my API key". */
const MEANS_BEFORE = /\b(?:with|using|via|through|attached to|authenticated by|has|have)\s+(?:(?:the|my|your|its|their|current|a|an|this|that|valid)\s+)*$/;
/** The credential is the subject of what follows ("every store the API key can see"). */
const SUBJECT_AFTER = /^\s+(?:can|could|has|have|is|are|allows?|grants?)\b/;
/** The sentence says the values are not returned ("Passwords are never returned", "values are never shown"). */
const NOT_RETURNED = /\b(?:are|is)\s+(?:never|not)\s+(?:returned|shown|exposed|included|revealed|printed)\b|\bmetadata only\b|\bno secrets\b/;

/**
 * Whether the description says the call returns credentials or the environment: some match where the
 * credential is what comes back, not how the call authenticates, in a sentence that does not say the
 * values are withheld. Only the description's own reading is refined here; a name that says secrets
 * still holds (untrusted text never lowers what the name implies).
 */
function returnsSecrets(description: string): boolean {
  if (!RETURNS_SECRETS.test(description)) return false;
  RETURNS_SECRETS_ALL.lastIndex = 0;
  for (let m = RETURNS_SECRETS_ALL.exec(description); m; m = RETURNS_SECRETS_ALL.exec(description)) {
    const secret = m[2];
    const at = m.index + m[0].length - secret.length;
    const sentence = description.slice(at).split(/[.!?](?:\s|$)/, 1)[0];
    if (MEANS_BEFORE.test(description.slice(Math.max(0, at - 40), at)) || SUBJECT_AFTER.test(description.slice(at + secret.length, at + secret.length + 12))) continue;
    if (NOT_RETURNED.test(sentence) || NOT_RETURNED.test(description.slice(at, at + 200).split(/[.!?](?:\s|$)/).slice(0, 2).join('. '))) continue;
    return true;
  }
  return false;
}

export function refinementsFor(c: Classification, tool?: ToolDefinition): Refinement[] {
  if (!tool) return [];
  const out: Refinement[] = [];
  const words = nameWords(tool.name).join(' ');
  const description = (tool.description ?? '').toLowerCase();
  if (c.category === 'Read' && (SECRET_NAME.test(words) || returnsSecrets(description))) {
    out.push({
      id: 'returns-secrets', attack: 'credential-leak',
      says: 'It returns credentials or the process environment, so each call waits for a human even though it only reads.',
    });
  }
  const paths = urlArguments(tool);
  const fetching: Category[] = ['Read', 'Write', 'Execute'];
  if (paths.length && fetching.includes(c.category) && (FETCHES.test(words) || FETCHES.test(description.slice(0, 300)))) {
    out.push({
      id: 'fetches-url', attack: 'ssrf', paths,
      says: 'It fetches a URL the caller chooses, so it is rate-limited like a Write and refuses loopback, link-local, private-range and cloud-metadata addresses.',
    });
  }
  return out;
}

export const SSRF_DENIAL = 'Requests to loopback, link-local, private-range and cloud-metadata addresses are refused (SSRF).';
