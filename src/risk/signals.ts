import { BULK_WORDS, CREDENTIAL_WORDS } from './lexicon.js';
import type { Signal, ToolDefinition } from './types.js';

const PATH_PARAM = /^(path|paths|file|files|filename|filenames|filepath|file_path|dir|dirs|directory|directories|folder|source|destination|dest|output_?dir|root|cwd)$/i;
const URL_PARAM = /(url|uri|urls|href|endpoint|website|domain|hostname)$/i;
const CODE_PARAM = /^(code|script|command|cmd|commands|query|sql|expression|js|javascript|python|statement|function|pipeline|aggregation|jq|args|argv|source_code)$/i;
const CREDENTIAL_PARAM = /(token|password|passwd|secret|api_?key|apikey|credential|private_?key)/i;
const TEMPLATE_PARAM = /(html|template|markup|body_html)/i;

interface Property { name: string; schema: Record<string, unknown> }

/** Every property of an input schema, nested ones included (to a modest depth). */
function properties(schema: unknown, depth = 0, out: Property[] = []): Property[] {
  if (!schema || typeof schema !== 'object' || depth > 3) return out;
  const s = schema as Record<string, unknown>;
  const props = s.properties && typeof s.properties === 'object' ? (s.properties as Record<string, unknown>) : {};
  for (const [name, value] of Object.entries(props)) {
    if (!value || typeof value !== 'object') continue;
    out.push({ name, schema: value as Record<string, unknown> });
    properties(value, depth + 1, out);
    properties((value as Record<string, unknown>).items, depth + 1, out);
  }
  return out;
}

/** Which of the five name patterns a property name matches, one bit each (memoised: names recur across tools; bounded). */
const PARAMS = [PATH_PARAM, URL_PARAM, CODE_PARAM, CREDENTIAL_PARAM, TEMPLATE_PARAM];
const [PATH, URL, CODE, CREDENTIAL, TEMPLATE] = [1, 2, 4, 8, 16];
const paramBits = new Map<string, number>();
function bitsOf(name: string): number {
  let bits = paramBits.get(name);
  if (bits === undefined) {
    if (paramBits.size >= 50_000) paramBits.clear();
    bits = 0;
    for (let i = 0; i < PARAMS.length; i++) if (PARAMS[i].test(name)) bits |= 1 << i;
    paramBits.set(name, bits);
  }
  return bits;
}

// Each prose regex is guarded by an `includes` of a word it cannot match without (cheap, and the answer is the same).
export function signalsOf(tool: ToolDefinition, nameWords: string[], prose: string): Signal[] {
  const props = properties(tool.inputSchema);
  const top = tool.inputSchema && typeof tool.inputSchema === 'object' ? Object.keys(((tool.inputSchema as Record<string, unknown>).properties as object) ?? {}) : [];
  let bits = 0;
  for (const p of props) bits |= bitsOf(p.name);
  const out: Signal[] = [];
  if ((bits & PATH) !== 0 || ((prose.includes('file') || prose.includes('director')) && /\bfile ?(path|system)\b|\bdirector(y|ies)\b/.test(prose))) out.push('filesystem_path');
  if ((bits & URL) !== 0 || props.some((p) => p.schema.format === 'uri') || (prose.includes('url') && /\burls?\b/.test(prose))) out.push('url');
  if ((bits & CODE) !== 0 || ((prose.includes('sql') || prose.includes('script') || prose.includes('shell command') || prose.includes('expression')) && /\b(sql|javascript|script|shell command|expression)\b/.test(prose))) out.push('code_or_query');
  if ((bits & CREDENTIAL) !== 0 || CREDENTIAL_WORDS.test(nameWords.join(' ')) || ((prose.includes('secret') || prose.includes('credential') || prose.includes('password') || prose.includes('api key') || prose.includes('environment variables') || prose.includes('connection string')) && /\b(environment variables|secrets?|credentials?|api keys?|passwords?|connection string)\b/.test(prose))) out.push('credentials');
  if ((bits & TEMPLATE) !== 0 || ((prose.includes('html') || prose.includes('template')) && /\b(html|template)\b/.test(prose))) out.push('html_or_template');
  if (nameWords.some((w) => BULK_WORDS.test(w))) out.push('bulk');
  if (top.length > 8) out.push('many_parameters');
  if (tool.annotations?.openWorldHint === true) out.push('open_world');
  return out;
}
