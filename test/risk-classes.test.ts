import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyTools, type Category, type ToolDefinition } from '../src/risk/index.js';

/**
 * The classes of reasoning of issue 13, each with invented tools (none is taken from the blind
 * set): a word's sense from its server, opaque names yielding to descriptions, destruction in
 * other words, generating versus writing, reports versus query languages, browsers and quiet
 * tools, and an honest fallback.
 */
type Case = [ToolDefinition, Category];
const str = { type: 'string' };
const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties });

function check(server: { name?: string; instructions?: string }, cases: Case[]) {
  const got = classifyTools(cases.map(([t]) => t), server);
  cases.forEach(([tool, want], i) => {
    it(`${server.name ?? '(no server)'}: ${tool.name} is ${want}`, () => assert.equal(got[i].category, want, got[i].rationale));
  });
}

describe('a word takes its sense from the server', () => {
  check({ name: 'crypto-exchange', instructions: 'Trade on spot markets and manage your wallet balances.' }, [
    [{ name: 'create_order', description: 'Create a limit or market order on the exchange.' }, 'Financial'],
    [{ name: 'cancel_order', description: 'Cancel an open order.' }, 'Financial'],
    [{ name: 'get_order_book', description: 'Fetch the order book for a symbol.' }, 'Read'],
    [{ name: 'send_tokens', description: 'Send tokens to a wallet address.' }, 'Financial'],
    [{ name: 'approve_token_spending', description: 'Approve a spender to use your tokens.' }, 'Financial'],
    [{ name: 'place-market-order', description: 'Place a market order.' }, 'Financial'],
    [{ name: 'set-leverage', description: 'Set the leverage for a futures symbol.' }, 'Financial'],
  ]);
  check({ name: 'sqlite-tools', instructions: 'Inspect and change a local SQLite database.' }, [
    [{ name: 'list_rows', description: 'List rows of a table.', inputSchema: obj({ order: { type: 'string', enum: ['asc', 'desc'] } }) }, 'Read'],
    [{ name: 'update_sort_order', description: 'Change the display order of saved views.' }, 'Write'],
    [{ name: 'sqlite_drop_view', description: 'Drop a view from the database.' }, 'Destructive'],
    [{ name: 'add_to_blocklist', description: 'Add an address to the blocklist.' }, 'Write'],
  ]);
  check({ name: 'phone-device' }, [
    [{ name: 'get_charge', description: 'Battery charge level of the phone.' }, 'Read'],
    [{ name: 'checkout_branch', description: 'Check out a branch of the local repository.' }, 'Write'],
  ]);
  check({ name: 'hosting-billing', instructions: 'Manage subscriptions and payment methods of a hosting account.' }, [
    [{ name: 'billing_disableAutoRenewalV1', description: 'Disable auto-renewal for a subscription.' }, 'Financial'],
    [{ name: 'billing_setDefaultPaymentMethodV1', description: 'Set the default payment method.' }, 'Financial'],
    [{ name: 'billing_listSubscriptionsV1', description: 'List subscriptions.' }, 'Read'],
    [{ name: 'pause_subscription', description: 'Pause a customer subscription.' }, 'Financial'],
  ]);
});

describe('an opaque name yields to a clear description', () => {
  check({ name: 'misc' }, [
    [{ name: 'send', description: 'Send USDC to an address.' }, 'Financial'],
    [{ name: 'buy', description: 'Buy a domain for a year.' }, 'Financial'],
    [{ name: 'ship', description: 'Ship the release to production.' }, 'Execute'],
    [{ name: 'kick', description: 'Kick off the nightly pipeline.' }, 'Execute'],
    [{ name: 'ask_helper', description: 'Hand the task to another coding agent and return its answer.' }, 'Execute'],
    [{ name: 'image_build', description: 'Build a container image from a Containerfile.' }, 'Execute'],
  ]);
});

describe('destruction in other words', () => {
  check({ name: 'store' }, [
    [{ name: 'purge_cache_entries', description: 'Purge every entry in the store.' }, 'Destructive'],
    [{ name: 'empty_trash', description: 'Empty the trash.' }, 'Destructive'],
    [{ name: 'truncate_table', description: 'Truncate a table.' }, 'Destructive'],
    [{ name: 'archive_note', description: 'Archive a note. Archived notes are permanently deleted after 30 days.' }, 'Destructive'],
    [{ name: 'remove_label', description: 'Remove a label from a card.' }, 'Write'],
    [{ name: 'disable_domain_lock', description: 'Disable the transfer lock of a domain.' }, 'Destructive'],
    [{ name: 'repo_reset', description: 'Reset the current branch.', inputSchema: obj({ mode: { type: 'string', enum: ['soft', 'mixed', 'hard'] } }) }, 'Destructive'],
    [{ name: 'repo_push', description: 'Push commits to the remote.', inputSchema: obj({ force: { type: 'boolean' } }) }, 'Destructive'],
    [{ name: 'repo_branch', description: 'Manage branches.', inputSchema: obj({ operation: { type: 'string', enum: ['list', 'create', 'delete', 'rename'] } }) }, 'Destructive'],
    [{ name: 'list_events', description: 'List audit events.', inputSchema: obj({ action: { type: 'string', description: 'Filter by action', enum: ['created', 'deleted', 'build_failed'] } }) }, 'Read'],
  ]);
});

describe('generating is not writing', () => {
  check({ name: 'charts' }, [
    [{ name: 'generate_area_chart', description: 'Generate an area chart and return its image URL.' }, 'Read'],
    [{ name: 'render_diagram', description: 'Render a Mermaid diagram as SVG.' }, 'Read'],
    [{ name: 'suggest_query', description: 'Suggest a query for the question.' }, 'Read'],
    [{ name: 'build_share_url', description: 'Build a URL that opens the given view.' }, 'Read'],
    [{ name: 'draw_flowchart', description: 'Draw a flowchart.', inputSchema: obj({ outputType: { type: 'string', enum: ['svg', 'png', 'file'] } }) }, 'Write'],
    [{ name: 'generate_api_key', description: 'Generate a new API key for the project.' }, 'Write'],
  ]);
});

describe('reports versus query languages', () => {
  check({ name: 'observability' }, [
    [{ name: 'run_cohort_report', description: 'Run the cohort retention report.' }, 'Read'],
    [{ name: 'score_page_speed', description: 'Score the page speed of a URL.' }, 'Read'],
    [{ name: 'runSecurityAudit', description: 'Runs a security audit of the current page.' }, 'Read'],
    [{ name: 'query_metrics', description: 'Evaluate a PromQL expression at one instant.', inputSchema: obj({ query: str }) }, 'Execute'],
    [{ name: 'search_logs', description: 'Search logs with a LogQL query.', inputSchema: obj({ logql: str }) }, 'Execute'],
    [{ name: 'search_documents', description: 'Search documents with an Elasticsearch query DSL body.', inputSchema: obj({ body: { type: 'object' } }) }, 'Execute'],
    [{ name: 'search_issues', description: 'Search issues by keyword.', inputSchema: obj({ q: str }) }, 'Read'],
  ]);
});

describe('browsers and quiet tools', () => {
  check({ name: 'web-browser' }, [
    [{ name: 'browser_open_page', description: 'Open a page in a new tab.' }, 'Read'],
    [{ name: 'browser_switch_tab', description: 'Switch to another tab.' }, 'Read'],
    [{ name: 'browser_export_pdf', description: 'Export the current page as a PDF.' }, 'Read'],
    [{ name: 'browser_click', description: 'Click an element.' }, 'Execute'],
    [{ name: 'browser_type', description: 'Type text into an input.' }, 'Execute'],
    [{ name: 'browser_submit_form', description: 'Submit a form.' }, 'Execute'],
  ]);
  check({ name: 'daemon' }, [
    [{ name: 'service_status', description: '' }, 'Read'],
    [{ name: 'health', description: '' }, 'Read'],
    [{ name: 'describe_cluster', description: '' }, 'Read'],
    [{ name: 'version_info' }, 'Read'],
  ]);
});

describe('more senses from the server and the name\'s shape', () => {
  check({ name: 'site-host', instructions: 'Deploy and inspect sites.' }, [
    [{ name: 'user-services-reader', description: 'Select and run one of the read operations (read-only).', inputSchema: obj({ operation: { type: 'string', enum: ['get-user'] } }) }, 'Read'],
    [{ name: 'billing_getPlansV1', description: 'Get the list of hosting plans.' }, 'Read'],
    [{ name: 'start_search', description: 'Start a file search in the background and return its id.' }, 'Read'],
    [{ name: 'rerank_documents', description: 'Rerank documents by relevance to a query.' }, 'Read'],
  ]);
  check({ name: 'gitops-cd', instructions: 'Argo-style GitOps deployments.' }, [
    [{ name: 'sync_application', description: 'Sync an application to its target revision.' }, 'Execute'],
    [{ name: 'get_application', description: 'Get an application.' }, 'Read'],
  ]);
  check({ name: 'payments-co', instructions: 'Payments, subscriptions and metered billing.' }, [
    [{ name: 'create_usage_event', description: 'Record a usage event for a customer.' }, 'Financial'],
    [{ name: 'grant_credits', description: 'Grant credits to a customer balance.' }, 'Financial'],
    [{ name: 'generate_revenue_map', description: 'Generate a map of revenue by region.' }, 'Read'],
  ]);
});

describe('the fallback is rare and says so', () => {
  it('uses the description beyond its first sentence, then the schema, before giving up', () => {
    const [later, schema, nothing] = classifyTools([
      { name: 'frobnicator', description: 'Frobnicator v2. Deletes the widget permanently.' },
      { name: 'widgets', description: '', inputSchema: obj({ action: { type: 'string', enum: ['list', 'get', 'delete'] } }) },
      { name: 'zork', description: '' },
    ], { name: 'x' });
    assert.equal(later.category, 'Destructive', later.rationale);
    assert.equal(schema.category, 'Destructive', schema.rationale);
    assert.equal(nothing.category, 'Write');
    assert.ok(nothing.confidence <= 0.3, `confidence ${nothing.confidence}`);
    assert.match(nothing.rationale, /confidence is low/);
  });
  it('an empty description takes the server\'s instructions before the fallback', () => {
    const [c] = classifyTools([{ name: 'zork', description: '' }], { name: 'docs-search', instructions: 'Search the product documentation.' });
    assert.equal(c.category, 'Read', c.rationale);
    assert.ok(c.confidence <= 0.5);
    assert.ok(c.evidence.some((e) => e.from === 'server'));
  });
});
