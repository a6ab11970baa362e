import { RE2JS } from 're2js';
import type { FindingKind, Level } from './types.js';

/**
 * Phrases aimed at the model rather than the user (tool poisoning): each rule names its kind, the
 * level it calls for and what it means. They run with RE2 (linear time on any input) over text
 * lower-cased, with `*` and backticks removed and hidden characters dropped (so `ig\u200Bnore`
 * still reads "ignore"). A `hide` rule is specific enough that ordinary tools do not say it; a
 * `warn` rule is a weaker sign worth a look (the false-positive count over the corpus is in
 * docs/risk.md).
 */
/**
 * `anchors`: groups of literal strings; the text must hold one of every group for the rule to run at all (a native
 * substring search, linear and fast): RE2's matcher is slow on alternations, so most fields, which
 * hold none of them, never reach it.
 */
interface Rule { kind: FindingKind; level: Level; says: string; source: string; anchors: readonly (readonly string[])[] }

const W = '(?:\\S+\\s+)';
const SENSITIVE = '(?:~/\\.ssh|\\.ssh/|id_rsa|id_ed25519|id_ecdsa|id_dsa|authorized_keys|~/\\.aws|\\.aws/credentials|\\.netrc|\\.git-credentials|\\.npmrc|\\.pypirc|/etc/shadow|/etc/passwd|mcp\\.json|\\.cursor/|claude_desktop_config|\\.kube/config|\\.docker/config\\.json|wallet\\.dat|\\.bash_history|\\.zsh_history|\\.env\\b)';
const SENSITIVE_ANCHORS = ['.ssh', 'id_rsa', 'id_ed25519', 'id_ecdsa', 'id_dsa', 'authorized_keys', '.aws', '.netrc', '.git-credentials', '.npmrc', '.pypirc', '/etc/shadow', '/etc/passwd', 'mcp.json', '.cursor/', 'claude_desktop_config', '.kube/config', '.docker/config', 'wallet.dat', '_history', '.env'];
const IMPERATIVE_START = '(?:^|[.!:;,(]\\s*|\\bfirst\\s+|\\bmust\\s+|\\bplease\\s+|\\balways\\s+|\\bthen\\s+|\\band\\s+|\\bto\\s+do\\s+so,?\\s+)';
const TAKE = '(?:read|open|cat|load|send|pass|include|attach|upload|provide|copy|forward|exfiltrate|fetch|collect|grab|dump)';
const USER = '(?:the\\s+)?(?:user|human|operator)\\b';
const VERB_DO = '(?:read|send|call|upload|forward|copy|include|pass|post|attach|exfiltrate|transmit|share|collect|invoke|execute|bcc)(?:s|es)?';
const DATA = '(?:conversation|chat|history|messages|context|data|contents?|results?|outputs?|responses?|credentials|keys|tokens|secrets|information|details|emails|documents|notes)';
const ELSEWHERE = '(?:https?://|[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}|(?:the\\s+)?(?:following|this|my|our|an?\\s+external|a\\s+remote|an?\\s+other)\\s+(?:url|server|address|endpoint|webhook|email|inbox))';

const NEGATION = ['not ', "n't ", 'dont ', 'never ', 'without '];
const ADDRESSEE = ['user', 'human', 'operator'];
const SECRET_WORDS = ['ssh key', 'private key', 'credentials', 'password', 'secrets', 'environment variable', 'session cookie'];
const SLOTS = ['parameter', 'argument', 'field', 'sidenote', 'note', 'comment'];
const SEND = ['send', 'post', 'forward', 'upload', 'transmit', 'email', 'copy', 'report', 'leak', 'exfiltrate', 'share', 'bcc'];
const DESTINATIONS = ['http://', 'https://', '@', 'url', 'server', 'address', 'endpoint', 'webhook', 'inbox'];
const STEER = ['always', 'must', 'should'].flatMap((m) => [' call', ' use', ' invoke', ' run', ' first'].map((v) => m + v));

const RULES: Rule[] = [
  { kind: 'override', level: 'hide', says: 'tells the model to ignore or override its instructions', anchors: [['ignore', 'disregard', 'forget', 'override', 'bypass']],
    source: `\\b(?:ignore|disregard|forget|override|bypass)\\s+(?:(?:all|any|the|your|every|of|these|those)\\s+)*(?:previous|prior|above|earlier|preceding|other|existing|original|system|safety|security|user's|user|developer)\\s+(?:instructions?|prompts?|rules?|guidelines?|directions?|directives?|messages?|polic(?:y|ies)|constraints?|tools?'?\\s*(?:instructions?|rules?|descriptions?)?)` },
  { kind: 'override', level: 'hide', says: 'claims precedence over other instructions or tools', anchors: [['precedence', 'priority', 'you are now', 'not follow', 'not obey']],
    source: `\\b(?:takes?|has|have)\\s+(?:precedence|priority)\\s+over\\s+(?:(?:all|any)\\s+)?(?:other|previous|prior|system|user|the\\s+user's)\\b|\\byou\\s+are\\s+now\\s+(?:in\\s+)?(?:developer|dan|jailbreak|god|unrestricted)\\b|\\bdo\\s+not\\s+(?:follow|obey)\\s+(?:the\\s+)?(?:user|system|previous|other)\\b` },
  { kind: 'override', level: 'warn', says: 'speaks to the model about its prompt or in model-directed markup', anchors: [['system prompt', '<important', '<system', '<instruction', '<secret', '</important', '</system', '</instruction', '</secret']],
    source: `\\bsystem\\s+prompt\\b|</?(?:important|system|instructions?|secret)>` },
  { kind: 'conceal', level: 'hide', says: 'tells the model to hide something from the user', anchors: [[...NEGATION, 'hide ', 'conceal ', 'keep ', ' must', ' should'], ADDRESSEE],
    source: `\\b(?:do\\s+not|don't|dont|never|must\\s+not|should\\s+not)\\s+(?:tell|inform|mention\\s+(?:this|it)\\s+to|reveal\\s+(?:this|it)\\s+to|notify|alert|disclose\\s+(?:this|it)\\s+to|let)\\s+(?:(?:this|it|anything|that)\\s+)?(?:to\\s+)?${USER}|\\bwithout\\s+(?:telling|informing|notifying|alerting|letting)\\s+${USER}|\\b(?:hide|conceal|keep)\\s+(?:this|it|that|these)\\s+(?:secret\\s+)?from\\s+${USER}|\\b(?:the\\s+)?user\\s+(?:must|should)\\s+(?:not|never)\\s+(?:know|see|be\\s+told|find\\s+out|notice)` },
  { kind: 'conceal', level: 'hide', says: 'tells the model to act without the user seeing it', anchors: [['silently', 'secretly', 'covertly', 'not mention that you']],
    source: `\\bdo\\s+not\\s+mention\\s+that\\s+you\\b|\\b(?:silently|secretly|covertly)\\s+${VERB_DO}\\b` },
  { kind: 'conceal', level: 'warn', says: 'asks the model to leave something unsaid', anchors: [['do not mention', 'silently', 'secretly', 'covertly', 'otherwise the tool']],
    source: `\\bdo\\s+not\\s+mention\\b|\\b(?:silently|secretly|covertly)\\s+(?:\\S+\\s+){0,2}?${VERB_DO}|\\botherwise\\s+the\\s+tool\\s+(?:will\\s+not|won't|will\\s+fail|does\\s+not)` },
  { kind: 'credentials', level: 'hide', says: 'tells the model to read credentials or private files first', anchors: [SENSITIVE_ANCHORS],
    source: `${IMPERATIVE_START}${TAKE}\\s+${W}{0,4}?${SENSITIVE}` },
  { kind: 'credentials', level: 'hide', says: 'tells the model to pass secrets in an argument', anchors: [SECRET_WORDS, SLOTS],
    source: `\\b${TAKE}\\s+(?:the\\s+)?(?:user's\\s+|your\\s+|all\\s+)?(?:contents?\\s+of\\s+(?:the\\s+)?)?(?:ssh\\s+keys?|private\\s+keys?|credentials|passwords?|secrets|environment\\s+variables|session\\s+cookies)\\s+(?:as|in|into|to)\\s+(?:the\\s+|a\\s+)?(?:\\S+\\s+)?(?:parameter|argument|field|sidenote|note|notes|comment)\\b` },
  { kind: 'credentials', level: 'hide', says: 'tells the model to read something before it uses the tool', anchors: [['before using', 'before calling', 'before invoking', 'before running', 'before executing']],
    source: `\\bbefore\\s+(?:using|calling|invoking|running|executing)\\s+(?:this|the|any)\\s+tool,?\\s+(?:you\\s+)?(?:must\\s+|should\\s+|need\\s+to\\s+|have\\s+to\\s+)?(?:always\\s+|first\\s+)*(?:read|open|cat|load)\\b` },
  { kind: 'credentials', level: 'warn', says: 'names a credential file or private path', anchors: [SENSITIVE_ANCHORS],
    source: SENSITIVE },
  { kind: 'exfiltrate', level: 'hide', says: 'tells the model to send data elsewhere', anchors: [SEND, DESTINATIONS],
    source: `\\b(?:send|post|forward|upload|transmit|email|copy|report|leak|exfiltrate|share|bcc)\\s+(?:(?:all|the|every|any|this|its|their|user's|of|entire|full|whole)\\s+)*${DATA}\\s+${W}{0,3}?to\\s+${ELSEWHERE}` },
  { kind: 'exfiltrate', level: 'hide', says: 'redirects what other tools send', anchors: [['all ', 'every ', 'any '], ['sent to', 'forwarded to', 'redirected to', 'routed to', 'copied to', "cc'd to", 'ccd to', 'go to', 'paid to']],
    source: `\\b(?:all|every|any)\\s+(?:emails?|messages?|payments?|transfers?|funds?|invoices?)\\s+${W}{0,3}?(?:must|should|shall|will|are\\s+to)\\s+(?:always\\s+)?(?:be\\s+)?(?:sent|forwarded|redirected|routed|copied|bcc'?d|cc'?d|go|paid)\\s+to\\b` },
  { kind: 'exfiltrate', level: 'hide', says: 'gives orders for when it is merely present (shadowing other tools)', anchors: [['this tool is']],
    source: `\\b(?:when|whenever|if)\\s+this\\s+tool\\s+is\\s+(?:available|present|loaded|installed|enabled)\\b` },
  { kind: 'other_tool', level: 'warn', says: 'steers the model to call another tool', anchors: [[...STEER, 'instead of']],
    source: `\\b(?:always|must|you\\s+should)\\s+(?:first\\s+)?(?:call|use|invoke|run)\\s+(?:the\\s+)?\\S+\\s+tool\\b|\\binstead\\s+of\\s+(?:using\\s+|calling\\s+)?(?:the\\s+|any\\s+)?(?:other|\\S+)\\s+tool\\b` },
  { kind: 'other_tool', level: 'warn', says: 'tells the model to send something to an address', anchors: [SEND, ['http://', 'https://']],
    source: `\\b(?:send|post|forward|upload|email)\\s+${W}{0,3}?to\\s+https?://` },
];

const COMPILED = RULES.map((r) => ({ ...r, re: RE2JS.compile(r.source) }));
/**
 * One pass over a field for every rule's first anchor group: a literal alternation, which the
 * native engine runs in linear time (no quantifiers, nothing to backtrack into). A field with none
 * of them, as nearly every field is, is done.
 */
const GATE = new RegExp([...new Set(RULES.flatMap((r) => r.anchors[0]))].map((a) => a.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'));

/** The part of a field the phrases read: the rest is reported as too long (src/poison/scan.ts). */
export const PHRASE_SCAN_CHARS = 64 * 1024;

export interface PhraseHit { kind: FindingKind; level: Level; says: string; phrase: string }

/** Text as the phrases read it: lower case, emphasis and hidden characters gone. Linear. */
export function normalize(text: string): string {
  return text.slice(0, PHRASE_SCAN_CHARS).toLowerCase().replace(/[*`\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/gu, '');
}

/** The phrases `text` holds: at most one per rule, the first. */
export function phraseHits(text: string): PhraseHit[] {
  const lower = normalize(text);
  if (!GATE.test(lower)) return [];
  const out: PhraseHit[] = [];
  for (const r of COMPILED) {
    if (!r.anchors.every((group) => group.some((a) => lower.includes(a)))) continue;
    const m = r.re.matcher(lower);
    if (m.find()) out.push({ kind: r.kind, level: r.level, says: r.says, phrase: (m.group() ?? '').replace(/\s+/g, ' ').trim().slice(0, 120) });
  }
  // A hide rule's phrase also matches its kind's warn rule: one finding per kind is enough.
  return out.filter((h) => h.level === 'hide' || !out.some((o) => o.kind === h.kind && o.level === 'hide'));
}
