import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyTools } from '../src/risk/index.js';
import { check, obj, str } from './helpers/risk-cases.js';

/**
 * The classes of reasoning of issue 13, each with invented tools (none is taken from the blind
 * set): a word's sense from its server, opaque names yielding to descriptions, destruction in
 * other words, generating versus writing, reports versus query languages, browsers and quiet
 * tools, and an honest fallback.
 */

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

describe('a verb list anywhere in the sentence: the most dangerous listed action decides', () => {
  check({ name: 'emu-debugger' }, [
    [{ name: 'emu_threads', description: 'Thread operations: list, get current, or pause/resume/rename' }, 'Write'],
    [{ name: 'emu_sockets', description: 'List sockets/pipes, get a socket name, or close a socket' }, 'Write'],
    [{ name: 'emu_image', description: 'Get image info (size, layout, sections) or set entry point' }, 'Write'],
    [{ name: 'emu_watchpoints', description: 'Unified tool for watchpoint operations (set, get, list, toggle, remove)' }, 'Write'],
    [{ name: 'emu_exec', description: 'Execution control operations: step into/over, run, get trace info' }, 'Execute'],
    [{ name: 'emu_frames', description: 'Frame operations: call stack, read raw, get locals' }, 'Read'],
    [{ name: 'emu_hotfix', description: 'List, apply or restore patches, or export the patched image' }, 'Write'],
  ]);
});

describe('a word\'s sense from its shape in the name and the sentence', () => {
  check({ name: 'crawler' }, [
    [{ name: 'crawler_links', description: 'Smart link extraction from a page.' }, 'Read'],
    [{ name: 'crawler_patches', description: 'List the patches published for a site.' }, 'Read'],
    [{ name: 'csv_to_json', description: 'Turns CSV text into JSON.' }, 'Read'],
    [{ name: 'sqlToMongo', description: 'Converts a SQL query to a MongoDB filter.' }, 'Read'],
    [{ name: 'set_custom_user_agent', description: 'Set a custom user agent string for requests.' }, 'Write'],
    [{ name: 'fetch_gated', description: 'Access blocked or protected pages through a rotating proxy.' }, 'Read'],
  ]);
});

describe('destruction is what the call does, not what it avoids', () => {
  check({ name: 'whiteboard' }, [
    [{ name: 'add_board_tab', description: 'Append a tab to the board without touching existing tabs, instead of new_board, which wipes everything.' }, 'Write'],
    [{ name: 'new_board', description: 'DESTRUCTIVE: replaces the entire board, including unsaved sketches.' }, 'Destructive'],
    [{ name: 'open_board_file', description: 'Open a .board file, replacing the entire workspace with its contents.' }, 'Destructive'],
    [{ name: 'archive_sketch', description: 'Archive a sketch; this does not permanently remove it.' }, 'Write'],
  ]);
});

describe('generating writes when it writes a file', () => {
  check({ name: 'reports-to-disk' }, [
    [{ name: 'export_board', description: 'Export the current board to a file (png or svg).' }, 'Write'],
    [{ name: 'table_export', description: 'Exports a table to a CSV file.' }, 'Write'],
    [{ name: 'chart_render', description: 'Checks the chart spec and returns a rendered PNG.', inputSchema: obj({ spec: str, outputPath: str }) }, 'Write'],
    [{ name: 'chart_preview', description: 'Checks the chart spec and returns a rendered PNG.', inputSchema: obj({ spec: str }) }, 'Read'],
  ]);
});

describe('a file of statements runs them', () => {
  check({ name: 'local-dbms' }, [
    [{ name: 'schema_import', description: 'Imports a SQL dump into a database.' }, 'Execute'],
    [{ name: 'contacts_import', description: 'Imports contacts from a CSV file into the address book.' }, 'Write'],
  ]);
});

describe('browser automation in other words', () => {
  check({ name: 'scraper-cloud' }, [
    [{ name: 'cloud_browser', description: 'Hosted browser automation from plain-language steps such as "log in, open settings".' }, 'Execute'],
    [{ name: 'cloud_fetch', description: 'Fetch one page and return its text.' }, 'Read'],
  ]);
});

describe('a call that takes a payment spends money', () => {
  check({ name: 'agent-registry' }, [
    [{ name: 'renew_badge', description: 'Renew the badge of this agent for another month.', inputSchema: obj({ payment_tx: str }) }, 'Financial'],
    [{ name: 'batch_checkin', description: 'Submit liveness check-ins for several agents. One payment covers all of them.' }, 'Financial'],
    [{ name: 'get_badge', description: 'Get the badge of an agent.', inputSchema: obj({ payment_tx: str }) }, 'Read'],
  ]);
});

describe('query languages in other words', () => {
  check({ name: 'tasks-cloud' }, [
    [{ name: 'get_items_by_filter', description: 'Get items using filter language, e.g. "today & #work".', inputSchema: obj({ query: str }) }, 'Execute'],
    [{ name: 'crm_search_all', description: 'Search across records using SOSL (Salesforce Object Search Language).' }, 'Execute'],
    [{ name: 'list_tickets', description: 'List tickets in a board.', inputSchema: obj({ board: str, wiql: str }) }, 'Execute'],
    [{ name: 'sql_to_filter', description: 'Converts a SQL statement to a filter object.', inputSchema: obj({ sql: str }) }, 'Read'],
    [{ name: 'list_items', description: 'List items.', inputSchema: obj({ lang: { type: 'string', description: 'The search language of the results' } }) }, 'Read'],
  ]);
});

describe('destruction through a mode or an option', () => {
  check({ name: 'planner' }, [
    [{ name: 'clear_all_notes', description: 'Clear notes and reset the board.' }, 'Destructive'],
    [{ name: 'clear_filter', description: 'Clear the current filter.' }, 'Write'],
    [{ name: 'digest_history', description: 'Summarize the history of a card.', inputSchema: obj({ card: str, delete_raw: { type: 'boolean' } }) }, 'Destructive'],
    [{ name: 'save_plan', description: 'Save the plan.', inputSchema: obj({ writeMode: { type: 'string', enum: ['append', 'overwrite', 'merge'] } }) }, 'Destructive'],
    [{ name: 'shrink_card_notes', description: 'Shrink notes for a finished card. Removes the long notes but keeps the summaries.' }, 'Destructive'],
  ]);
});

describe('the description picks among the name\'s verbs', () => {
  check({ name: 'crm-mcp' }, [
    [{ name: 'crm_read_webhook_trigger', description: 'Read webhook triggers of the org.' }, 'Read'],
    [{ name: 'crm_write_webhook_trigger', description: 'Create or update a webhook trigger.' }, 'Write'],
    [{ name: 'crm_interact_stop', description: 'Stop an interaction session and free its resources.' }, 'Write'],
    [{ name: 'continue_editing', description: 'Continue editing the most recent drawing with a new prompt.' }, 'Write'],
    [{ name: 'get_attachment', description: 'Download an attachment and save it to the local disk.' }, 'Write'],
  ]);
});

describe('money documents and kept artefacts', () => {
  check({ name: 'ledger-books', instructions: 'Bookkeeping for a small company.' }, [
    [{ name: 'create_credit_memo', description: 'Create a credit memo for a customer.' }, 'Financial'],
    [{ name: 'record_sale', description: 'Record a cash sale to a customer.' }, 'Financial'],
    [{ name: 'add_expense', description: 'Add an expense paid by card.' }, 'Financial'],
    [{ name: 'create_contact_note', description: 'Create a note on a contact.' }, 'Write'],
  ]);
  check({ name: 'proposals' }, [
    [{ name: 'create_estimate', description: 'Create an estimate for a client.' }, 'Write'],
    [{ name: 'update_estimate', description: 'Update an estimate.' }, 'Write'],
  ]);
  check({ name: 'shipping-calc' }, [
    [{ name: 'create_estimate', description: 'Create a shipping estimate for a parcel.' }, 'Read'],
  ]);
});

describe('nouns that look like verbs', () => {
  check({ name: 'toolkit-docs' }, [
    [{ name: 'onboarding_guide', description: 'Mandatory first step. Returns the guide for this API.' }, 'Read'],
    [{ name: 'setup_guide', description: 'Step 1: read this guide before calling other tools.' }, 'Read'],
    [{ name: 'turn_feedback', description: 'Report how well the tools worked this turn.' }, 'Write'],
  ]);
});

// Classes added with the dev5 and dev6 batches (test/corpus/DEV-NOTES.md); every tool here is invented.
describe('a qualifier picks the sense of a money word', () => {
  check({ name: 'factory-erp', instructions: 'Sales invoices, payments and manufacturing for a small business.' }, [
    [{ name: 'create_work_order', description: 'Create a work order for the production line.' }, 'Write'],
    [{ name: 'create_sales_order', description: 'Create a sales order for a customer.' }, 'Financial'],
  ]);
  check({ name: 'wallet', instructions: 'Send and receive tokens.' }, [
    [{ name: 'send_tokens', description: 'Send tokens to an address.' }, 'Financial'],
    [{ name: 'send_api_token', description: 'Send the API token to the configured webhook.' }, 'Write'],
  ]);
});

describe('generic documents where money is the business', () => {
  check({ name: 'ledger-erp', instructions: 'Invoices, payments and orders.' }, [
    [{ name: 'doc_submit', description: 'Submit any document by its type and name.', inputSchema: obj({ doctype: str, name: str }) }, 'Financial'],
    [{ name: 'doc_get', description: 'Get any document by its type and name.', inputSchema: obj({ doctype: str, name: str }) }, 'Read'],
    [{ name: 'create_dns_record', description: 'Create a DNS record.' }, 'Write'],
  ]);
  check({ name: 'notes' }, [
    [{ name: 'doc_update', description: 'Update any document.' }, 'Write'],
  ]);
});

describe('money owed to people, and money documents as heads', () => {
  check({ name: 'gig-board', instructions: 'Post paid tasks for human workers and pay them from your balance.' }, [
    // Posting a bounty promises money to whoever does the task (SPEC 5: creating a financial obligation is Financial; issue 24 moved it from Write).
    [{ name: 'post_bounty', description: 'Post a bounty for a real-world task.' }, 'Financial'],
    [{ name: 'create_bounty', description: 'Create a bounty that a worker can claim.' }, 'Financial'],
    [{ name: 'accept_bounty_application', description: 'Accept a worker\'s application.' }, 'Financial'],
    [{ name: 'complete_bounty', description: 'Mark the task done and rate the worker.' }, 'Financial'],
    [{ name: 'create_expense_claim', description: 'Create an expense claim for an employee.' }, 'Financial'],
    [{ name: 'start_conversation', description: 'Start a conversation with a worker.' }, 'Write'],
  ]);
});

describe('participles and pictures describe, they do not act', () => {
  check({ name: 'sales-kpis', instructions: 'Invoices and orders of a shop.' }, [
    [{ name: 'kpi_overdue', description: 'KPI card: count of submitted invoices that are overdue.', annotations: { readOnlyHint: true } }, 'Read'],
    [{ name: 'price_scatter', description: 'Scatter chart: item selling price vs quantity ordered.' }, 'Read'],
    [{ name: 'purge_old', description: 'Permanently deleting invoices older than ten years.' }, 'Destructive'],
  ]);
});

describe('deployments and builds in other words', () => {
  check({ name: 'paas' }, [
    [{ name: 'create_deployment', description: 'Create a new deployment of the project.' }, 'Execute'],
    [{ name: 'promote_deployment', description: 'Promote a preview deployment to production.' }, 'Execute'],
    [{ name: 'rollback_deployment', description: 'Roll back to the previous deployment.' }, 'Execute'],
    [{ name: 'service_create_from_repo', description: 'Create a new service from a GitHub repository.' }, 'Execute'],
    [{ name: 'create_service', description: 'Create an empty service record.' }, 'Write'],
    [{ name: 'tunnel_delete', description: 'Delete a TCP tunnel to the service.' }, 'Write'],
  ]);
  check({ name: 'automation' }, [
    [{ name: 'activate_workflow', description: 'Activate a workflow so that its triggers fire.' }, 'Execute'],
    [{ name: 'deactivate_workflow', description: 'Deactivate a workflow.' }, 'Write'],
    [{ name: 'submit_job', description: 'Submit a batch job to the mainframe.' }, 'Execute'],
  ]);
});

describe('agents and the work handed to them', () => {
  check({ name: 'agent-team', instructions: 'Run several coding agents side by side.' }, [
    [{ name: 'register_agent', description: 'Register a new AI agent and receive its API key.' }, 'Write'],
    [{ name: 'agent_spawn', description: 'Create a new agent in a tmux pane.' }, 'Execute'],
    [{ name: 'post_message', description: 'Send a task to one or more agents.' }, 'Execute'],
    [{ name: 'read_inbox', description: 'Read messages from an inbox.' }, 'Read'],
  ]);
});

describe('descriptions in other languages', () => {
  check({ name: 'erp-fr' }, [
    [{ name: 'dictionnaire', description: 'Récupère la liste des pays et des devises.' }, 'Read'],
    [{ name: 'facture_supprimer', description: 'Supprime définitivement une facture de la base.' }, 'Destructive'],
    [{ name: 'erp_reporting_projets', description: 'Reporting des projets (marge, rentabilité).' }, 'Read'],
  ]);
  check({ name: 'cloud-zh' }, [
    [{ name: 'queryEnvs', description: '查询环境列表与详情。', inputSchema: obj({ envId: str }) }, 'Read'],
    [{ name: 'removeBucket', description: '删除存储桶及其中的所有文件。' }, 'Destructive'],
  ]);
});

describe('what a statement kind, a blocked command or a mentioned language is not', () => {
  check({ name: 'mysql' }, [
    [{ name: 'execute', description: 'Execute an INSERT, UPDATE, or DELETE query.', inputSchema: obj({ sql: str }) }, 'Execute'],
    [{ name: 'search_procedures', description: 'Search for stored procedures containing a text in their SQL definition.', inputSchema: obj({ searchText: str }) }, 'Read'],
    [{ name: 'export_rows', description: 'Export rows of a table.', inputSchema: obj({ table: str, where: str }) }, 'Execute'],
  ]);
  check({ name: 'mainframe' }, [
    [{ name: 'tso_command', description: 'Execute a TSO command. BLOCKED: commands that purge or delete datasets.', inputSchema: obj({ command: str }) }, 'Execute'],
  ]);
});

describe('action enums say what a generic name does, both ways', () => {
  const action = (values: string[]) => obj({ action: { type: 'string', enum: values } });
  check({ name: 'cloud-console' }, [
    [{ name: 'manageDataModel', description: 'Data model tool.', inputSchema: action(['get', 'list', 'docs']) }, 'Read'],
    [{ name: 'managePlan', description: 'Plan tool.', inputSchema: action(['listPlans', 'deleteBackup', 'getPlan']) }, 'Destructive'],
    [{ name: 'batch_records', description: 'Batched record operations.', inputSchema: obj({ operation_type: { type: 'string', enum: ['create', 'update', 'delete', 'search'] } }) }, 'Destructive'],
    [{ name: 'batch_ops', description: 'Execute batched record operations (create/update/delete).' }, 'Destructive'],
    [{ name: 'remove_record_from_list', description: 'Remove a record from a list.' }, 'Write'],
  ]);
});

describe('sending in other words', () => {
  check({ name: 'mail' }, [
    [{ name: 'forward_email', description: 'Forward an existing email to one or more recipients. Fetches the original body and includes it.' }, 'Write'],
    [{ name: 'relay_message', description: 'Relay a message to another channel.' }, 'Write'],
    [{ name: 'port_forward', description: 'Forward a local port to a pod.' }, 'Execute'],
  ]);
});

describe('replacing the whole content destroys what was there', () => {
  check({ name: 'api-workbench' }, [
    [{ name: 'putCollection', description: 'Replaces the contents of a collection with the given definition.' }, 'Destructive'],
    [{ name: 'putEnvironment', description: 'Replaces all the contents of an environment.' }, 'Destructive'],
    [{ name: 'replace_in_file', description: 'Replaces all occurrences of a string in a file.' }, 'Write'],
  ]);
});

describe('a browser\'s elements and views, questions about state, and questions put to a model', () => {
  check({ name: 'page-driver' }, [
    [{ name: 'browser_toggle_checkbox', description: 'Tick or untick a checkbox.' }, 'Execute'],
    [{ name: 'browser_empty_field', description: 'Clear the text of an input field.' }, 'Execute'],
    [{ name: 'browser_set_focus', description: 'Move the focus to an element.' }, 'Execute'],
    [{ name: 'browser_window_new', description: 'Open a new window.' }, 'Read'],
    [{ name: 'browser_page_select', description: 'Select a page by its index.' }, 'Read'],
    [{ name: 'browser_page_close', description: 'Close a page.' }, 'Write'],
    [{ name: 'browser_navigate', description: 'Go to a URL.' }, 'Execute'],
    [{ name: 'browser_screenshot', description: 'Capture the page.' }, 'Read'],
  ]);
  check({ name: 'widgets' }, [
    [{ name: 'has_write_access', description: 'Whether the token may write to the workspace.' }, 'Read'],
    [{ name: 'is_archived', description: '' }, 'Read'],
    [{ name: 'ask_docs_assistant', description: 'Ask the documentation assistant a question about the API.' }, 'Execute'],
    [{ name: 'ask', description: 'Ask a question about the workspace and get the answer from its search index.' }, 'Read'],
  ]);
});

describe('work handed on: queued jobs, commands sent to run, raw HTTP requests, and membership taken away', () => {
  check({ name: 'task-runner', instructions: 'Manage background job queues.' }, [
    [{ name: 'enqueue_work', description: 'Add a new job to the queue; a worker runs it.' }, 'Execute'],
    [{ name: 'push_job', description: 'Push a job onto the default queue.' }, 'Execute'],
    [{ name: 'remove_job', description: 'Remove a job from the queue.' }, 'Destructive'],
    [{ name: 'create_job_template', description: 'Save a job template for later.' }, 'Write'],
  ]);
  check({ name: 'app-bridge' }, [
    [{ name: 'send_script', description: 'Send JavaScript commands to the running desktop app.' }, 'Execute'],
    [{ name: 'http_call', description: 'Make an HTTP request to any URL with a method, headers and body.' }, 'Execute'],
    [{ name: 'send_note', description: 'Send a note to the team channel.' }, 'Write'],
  ]);
  check({ name: 'workspace-admin' }, [
    [{ name: 'removeGroupMember', description: 'Removes a member from a group.' }, 'Write'],
    [{ name: 'removeProjectSite', description: 'Removes a site from a project.' }, 'Write'],
    [{ name: 'removeSite', description: 'Removes a site and all its content.' }, 'Destructive'],
    [{ name: 'delete_alias', description: 'Delete an alias of a deployment.' }, 'Write'],
  ]);
});
