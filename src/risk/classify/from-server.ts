import { DEPLOY_SERVER, lookupVerb, MONEY_SERVER } from '../lexicon.js';
import { type ServerContext } from '../types.js';
import { baseForms, nameWords } from '../words.js';
import { BROWSER_SERVER } from './context.js';

/** What the server as a whole says, computed once per server. */
export interface ServerProfile {
  browser: boolean;
  /** Nouns the sibling tools edit or delete: making one of those is a change to kept state, not a result handed back. */
  kept: Set<string>;
  /** Money is the server's business (payments, billing, an exchange, a wallet). */
  money: boolean;
  /** The server deploys applications (GitOps, CD): a sync there is a deployment. */
  deploy: boolean;
  /** The server keeps logs, events, traces or analytics (Loki, Datadog, PostHog, a warehouse). */
  analytics: boolean;
  /** The server's name, instructions or tool names speak of agents. */
  agents: boolean;
  /** Some sibling tool is named for destroying (delete_file, drop_table): a tool that runs the others can too. */
  destroys: boolean;
  text: string;
  words: Set<string>;
}


const KEEPING_VERBS = new Set(['update', 'edit', 'delete', 'modify', 'rename', 'remove', 'patch']);

/** The nouns that sibling tools update, edit or delete ("update-quote" keeps quotes). */
function keptNouns(siblings: readonly string[], serverWords: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const s of siblings) {
    const words = nameWords(s);
    if (!words.some((w) => KEEPING_VERBS.has(w))) continue;
    for (const w of words) if (!serverWords.has(w) && !KEEPING_VERBS.has(w)) for (const f of baseForms(w)) out.add(f);
  }
  return out;
}

const AGENTS = /\bagents?\b/;
/** Services whose queries are written in a query language of their own. */
const ANALYTICS_SERVER = /\b(logs?|logging|loki|splunk|datadog|elastic\w*|kibana|opensearch|grafana|prometheus|observability|telemetry|traces?|tracing|analytics|posthog|mixpanel|amplitude|clickhouse|bigquery|snowflake|athena|kusto|sentry|new ?relic|honeycomb|axiom)\b/;

/** What the sibling tools and the server's own words say, computed once per server. */
export function serverProfile(server: ServerContext): ServerProfile {
  const siblings = server.siblings ?? [];
  const text = `${server.name ?? ''} ${server.instructions ?? ''}`.toLowerCase();
  const siblingWords = siblings.map((s) => nameWords(s).join(' ')).join(' ');
  return {
    browser: (siblings.some((s) => /click/.test(s)) && siblings.some((s) => /navigate|screenshot/.test(s))) || BROWSER_SERVER.test((server.name ?? '').toLowerCase()),
    money: MONEY_SERVER.test(text) || MONEY_SERVER.test(siblingWords),
    deploy: DEPLOY_SERVER.test(text) || DEPLOY_SERVER.test(siblingWords),
    analytics: ANALYTICS_SERVER.test(text),
    agents: AGENTS.test(text) || siblings.some((s) => AGENTS.test(s)),
    destroys: siblings.some((s) => nameWords(s).some((w) => lookupVerb(w)?.category === 'Destructive')),
    text,
    words: new Set(nameWords(server.name ?? '')),
    kept: keptNouns(siblings, new Set(nameWords(server.name ?? ''))),
  };
}
