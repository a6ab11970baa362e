import { AMBIGUOUS, LANGUAGE_PARAM, lookupVerb, MONEY_SERVER, QUERY_LANGUAGE } from '../lexicon.js';
import { type Category, type ToolDefinition } from '../types.js';
import { BROWSER_SERVER, type Context, FLUFF, firstSentence } from './context.js';
import { LANGUAGE_INPUT } from './from-description.js';
import { QUERY_PARAM, topProperties, writesFile } from './from-schema.js';
import { type ServerProfile } from './from-server.js';

const URL_PARAM = /^(?:url|uri|href|link|target_?url|page_?url|[a-z]+_url|[a-z]+Url)$/;
const SQL_CONTEXT = /\b(sql|select [\w*]+ from|postgres\w*|mysql|sqlite|database query|read-only query)\b/;

/**
 * What the stages may ask about one tool, the costly answers worked out on first use. A class, not
 * an object of closures: one is built per tool, and its methods live once on the prototype (under
 * tsx, which `npm run bench` uses, every named closure also costs a `__name` call).
 */
export class ToolContext implements Context {
  browser: boolean;
  money: boolean;
  deploy: boolean;
  description: string;
  analytics: boolean;
  serverWords: Set<string>;
  kept: Set<string>;
  private cachedSql?: boolean;
  private cachedQueryInput?: boolean;
  private cachedUrlInput?: boolean;
  private cachedLanguageInput?: boolean;
  private cachedLeadVerb?: { base: string; category: Category } | null;
  private cachedNameNouns?: string[];

  constructor(private readonly tool: ToolDefinition, private readonly words: string[], private readonly rawDescription: string, private readonly lowerDescription: string, title: string, private readonly profile: ServerProfile) {
    this.browser = profile.browser || words.some((w) => BROWSER_SERVER.test(w));
    this.money = profile.money || MONEY_SERVER.test(lowerDescription.slice(0, 300));
    this.deploy = profile.deploy;
    this.description = `${lowerDescription} ${title.toLowerCase()}${writesFile(tool) ? ' will be saved' : ''}`;
    this.analytics = profile.analytics;
    this.serverWords = profile.words;
    this.kept = profile.kept;
  }

  /** Only a few verbs ask; the schema's text is costly to build for every tool. */
  get sql(): boolean {
    if (this.cachedSql === undefined) {
      const schemaText = JSON.stringify(this.tool.inputSchema ?? {}).slice(0, 4000).toLowerCase();
      // A query language runs only where an argument carries one ("search procedures by their SQL text" does not).
      this.cachedSql = (SQL_CONTEXT.test(this.lowerDescription) || /"sql"/.test(schemaText) || QUERY_LANGUAGE.test(schemaText)) && this.queryInput();
    }
    return this.cachedSql;
  }

  queryInput(): boolean {
    return (this.cachedQueryInput ??= topProperties(this.tool).some(([name]) => QUERY_PARAM.test(name) || LANGUAGE_PARAM.test(name)));
  }

  urlInput(): boolean {
    return (this.cachedUrlInput ??= topProperties(this.tool).some(([name, schema]) => URL_PARAM.test(name) || schema.format === 'uri'));
  }

  languageInput(): boolean {
    return (this.cachedLanguageInput ??= LANGUAGE_INPUT.test(this.lowerDescription.slice(0, 200)));
  }

  leadVerb(): { base: string; category: Category } | undefined {
    if (this.cachedLeadVerb === undefined) {
      const first = firstSentence(this.rawDescription);
      this.cachedLeadVerb = lookupVerb(first.lower.slice(FLUFF.exec(first.text)?.[0].length ?? 0).split(/\s+/, 1)[0].replace(/[^a-z0-9-]/g, '')) ?? null;
    }
    return this.cachedLeadVerb ?? undefined;
  }

  nameNouns(): string[] {
    return (this.cachedNameNouns ??= this.words.filter((w) => !this.profile.words.has(w) && (!lookupVerb(w) || AMBIGUOUS.has(w))));
  }
}
