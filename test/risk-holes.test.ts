import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { PolicySchema } from '../src/policy/index.js';
import { classifyTools, recommendPolicy, type ToolDefinition } from '../src/risk/index.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { check, obj, str } from './helpers/risk-cases.js';

/**
 * The classes of unsafe misses found on the old blind sets (now tuning data, issue 24 items 1–4),
 * each with invented tools (no name or description is taken from a set): money in a call's cost or
 * arguments, a signed transaction, deletion listed among what an open-ended call does, a batch of
 * the server's own tools, arguments that delete, HTTP method enums that offer DELETE, public links;
 * orders, backups, browser history, launched apps, earlier revisions, whole replacements, captured
 * data cleared and rebuilt databases. Each class holds a tool or limits it; the lax neighbours stay as they were.
 */

const array = { type: 'array', items: { type: 'integer' } };

describe('money in other words: what a call costs, and what its arguments commit', () => {
  check({ name: 'oracle-402', instructions: 'On-chain data for agents.' }, [
    [{ name: 'quote_gas', description: 'Returns the current gas estimate for Arbitrum. Costs $0.02 in USDC, paid per request.' }, 'Financial'],
    [{ name: 'decode_block', description: 'Decode a block by height. Each call is paid automatically from the wallet.' }, 'Financial'],
    [{ name: 'renew_name', description: 'Renew an ENS name. Requires x402 USDC payment on Base.' }, 'Financial'],
    // Asking whether an endpoint wants a payment pays nothing.
    [{ name: 'probe_paywall', description: 'Check whether a URL requires x402 payment and return its terms.', inputSchema: obj({ url: str }) }, 'Read'],
  ]);
  check({ name: 'crowd-tasks' }, [
    [{ name: 'ask_reviewer', description: 'Ask a person to review a paragraph and wait for the answer.', inputSchema: obj({ text: str, budget_usd: { type: 'number' } }) }, 'Financial'],
    [{ name: 'open_contest', description: 'Open a design contest; people submit entries and you choose one.', inputSchema: obj({ title: str, prize_eur: { type: 'number' } }) }, 'Financial'],
    [{ name: 'find_gigs', description: 'Search open gigs.', inputSchema: obj({ keyword: str, max_budget_usd: { type: 'number' } }) }, 'Read'],
  ]);
  check({ name: 'chain-kit' }, [
    [{ name: 'invoke_method', description: 'Calls a state-changing method of a deployed contract.', inputSchema: obj({ address: str, method: str, privateKey: str }) }, 'Financial'],
    [{ name: 'create_bucket', description: 'Create a storage bucket.', inputSchema: obj({ name: str, privateKey: str }) }, 'Write'],
  ]);
});

describe('money in a payment service\'s own words', () => {
  check({ name: 'wallet-billing', instructions: 'Billing and payments for a usage-based API.' }, [
    [{ name: 'set_top_up', description: 'Configure automatic top-up of the prepaid balance.', inputSchema: obj({ enabled: { type: 'boolean' }, threshold: { type: 'number' } }) }, 'Financial'],
    [{ name: 'books-post-transaction', description: 'Post a transaction to the books; its lines must balance.', inputSchema: obj({ request: { type: 'object' } }) }, 'Financial'],
    [{ name: 'gift_credits', description: 'Award credits to a customer.', inputSchema: obj({ customer: str, credits: { type: 'number' } }) }, 'Financial'],
    [{ name: 'partners-add-share', description: 'Add a revenue split that sends part of each sale to a partner.', inputSchema: obj({ request: { type: 'object' } }) }, 'Financial'],
    [{ name: 'send_api_request', description: 'Send a request to any service of the payments API.', inputSchema: obj({ service: str, method: str, request: { type: 'object' } }) }, 'Financial'],
    [{ name: 'list_ledger_entries', description: 'List ledger entries.' }, 'Read'],
  ]);
});

describe('trading and payments in other words', () => {
  check({ name: 'chain-desk', instructions: 'DeFi on EVM chains.' }, [
    [{ name: 'bridge_usdc', description: 'Bridge USDC from one chain to another.', inputSchema: obj({ amount: str }) }, 'Financial'],
    [{ name: 'mint_token', description: 'Mint tokens to an address.', inputSchema: obj({ to: str, amount: str }) }, 'Financial'],
    [{ name: 'claim_yield_rewards', description: 'Claim pending rewards.' }, 'Financial'],
    [{ name: 'deposit_liquidity', description: 'Add liquidity to a pool.', inputSchema: obj({ pool: str }) }, 'Financial'],
    [{ name: 'get_pool', description: 'Get a pool.', inputSchema: obj({ pool: str }) }, 'Read'],
  ]);
  check({ name: 'odds-market' }, [
    [{ name: 'place_wager', description: 'Place a bet on an outcome.', inputSchema: obj({ market: str, stake: { type: 'number' } }) }, 'Financial'],
  ]);
  check({ name: 'card-payments', instructions: 'Payments API for merchants.' }, [
    [{ name: 'capture_charge', description: 'Capture an authorized charge.', inputSchema: obj({ id: str }) }, 'Financial'],
    [{ name: 'screen_capture', description: 'Capture the dashboard screen.' }, 'Read'],
  ]);
  check({ name: 'gpu-market' }, [
    [{ name: 'rent_machine', description: 'Rent a machine by the hour.', inputSchema: obj({ type: str }) }, 'Financial'],
  ]);
});

describe('orders, backups and browser history', () => {
  check({ name: 'meal-box' }, [
    [{ name: 'place_box_order', description: 'Place the order for next week using the saved card.' }, 'Financial'],
    [{ name: 'confirm_order', description: 'Confirm the pending order.' }, 'Financial'],
    [{ name: 'cancel_work_order', description: 'Cancel a maintenance work order.' }, 'Write'],
  ]);
  check({ name: 'cloud-hosts' }, [
    [{ name: 'disable-snapshots-backups', description: 'Disable automatic backups on a server.' }, 'Destructive'],
    [{ name: 'toggle_privacy', description: 'Toggle the privacy protection of a hostname.' }, 'Destructive'],
    [{ name: 'enable-backups', description: 'Enable automatic backups on a server.' }, 'Write'],
  ]);
  check({ name: 'web-pilot' }, [
    [{ name: 'page_back', description: 'Navigate back in the browser history.' }, 'Execute'],
    [{ name: 'go_forward', description: 'Go forward one page.' }, 'Execute'],
    [{ name: 'click_element', description: 'Click an element on the page.', inputSchema: obj({ selector: str }) }, 'Execute'],
    [{ name: 'take_screenshot', description: 'Take a screenshot of the page.' }, 'Read'],
  ]);
  check({ name: 'rn-tools' }, [
    [{ name: 'find_bundlers', description: 'Scan local ports for bundler servers and automatically connect to any running apps it finds.', inputSchema: obj({ from: { type: 'number' } }) }, 'Execute'],
    [{ name: 'list_bundlers', description: 'List bundler servers on local ports. Does not connect to them.', inputSchema: obj({ from: { type: 'number' } }) }, 'Read'],
  ]);
  check({ name: 'device-lab' }, [
    [{ name: 'open_emulator', description: 'Opens the Android emulator.' }, 'Execute'],
    [{ name: 'list_devices', description: 'List attached devices.' }, 'Read'],
  ]);
});

describe('destruction in a domain\'s words: earlier revisions, whole replacements, cleared captures, rebuilt databases', () => {
  check({ name: 'docs-app' }, [
    [{ name: 'revert_page', description: 'Restore a page to an earlier version.', inputSchema: obj({ pageId: str, version: str }) }, 'Destructive'],
    [{ name: 'load_sheet_rows', description: 'Replace all rows in a sheet with the uploaded data.' }, 'Destructive'],
    [{ name: 'reset_device_app', description: 'Reset an app on the device (clears app data).' }, 'Destructive'],
    [{ name: 'postgres-recreate', description: 'Recreates a Postgres database service.' }, 'Destructive'],
    [{ name: 'set_story_links', description: 'Replace all web links on a story.' }, 'Write'],
  ]);
  check({ name: 'voice-lines', instructions: 'Phone numbers and calls.' }, [
    [{ name: 'release_line', description: 'Release a phone number from the account.', inputSchema: obj({ number: str }) }, 'Destructive'],
    [{ name: 'release_hold', description: 'Release a held call back to the queue.', inputSchema: obj({ call: str }) }, 'Write'],
  ]);
  check({ name: 'db-host' }, [
    [{ name: 'restore_instance', description: 'Restore an instance from a nightly backup.', inputSchema: obj({ instance: str, backup: str }) }, 'Destructive'],
    [{ name: 'load_dump', description: 'Load a dump into the database, replacing the current data.', inputSchema: obj({ path: str }) }, 'Destructive'],
    [{ name: 'restore_item', description: 'Restore an item from the trash.', inputSchema: obj({ id: str }) }, 'Write'],
  ]);
  check({ name: 'phone-farm' }, [
    [{ name: 'device_factory_defaults', description: 'Reset the device to factory settings.' }, 'Destructive'],
    [{ name: 'factory_reset', description: 'Factory reset a test phone.', inputSchema: obj({ serial: str }) }, 'Destructive'],
    [{ name: 'reset_password', description: 'Send a password reset email.', inputSchema: obj({ email: str }) }, 'Write'],
  ]);
  check({ name: 'devtools-bridge' }, [
    [{ name: 'clear_captured_requests', description: 'Clear the network requests captured so far.' }, 'Destructive'],
    [{ name: 'clear_console_buffer', description: 'Clear the buffered console output.' }, 'Destructive'],
    [{ name: 'site_storage_clear', description: 'Clear local storage and IndexedDB of the origin.' }, 'Destructive'],
    // Clearing a field in a browser is a browser action, not lost data.
    [{ name: 'clear_input', description: 'Clear a text input field.', inputSchema: obj({ selector: str }) }, 'Execute'],
    [{ name: 'clear_form_data', description: 'Clear form data.', inputSchema: obj({ selector: str }) }, 'Write'],
  ]);
  check({ name: 'forms-app' }, [
    [{ name: 'clear_form_fields', description: 'Clear the fields of a draft form.', inputSchema: obj({ form: str }) }, 'Write'],
  ]);
});

describe('destruction said structurally: what an open-ended call does, and the arguments it takes', () => {
  check({ name: 'docstore-admin' }, [
    [{ name: 'apply_ops', description: 'Apply a list of operations to a collection. Useful for creating, updating, or removing and deleting documents.', inputSchema: obj({ ops: { type: 'array' } }) }, 'Destructive'],
    [{ name: 'router', description: 'Key vault operations - commands for vaults. Includes CRUD operations on secrets and keys.', inputSchema: obj({ command: str, parameters: { type: 'object' } }) }, 'Destructive'],
    // Deletion the user does elsewhere is not what the call does.
    [{ name: 'refresh_index', description: 'Rebuild the search index. Use after creating, deleting or editing documents outside this tool.', inputSchema: obj({ full: { type: 'boolean' } }) }, 'Write'],
  ]);
  check({ name: 'bi-board' }, [
    [{ name: 'publish_chart', description: 'Create a public sharing link for a chart and return its URL.', inputSchema: obj({ chart_id: str }) }, 'Write'],
    [{ name: 'add_image', description: 'Add an image to a record. For big images, pass a public URL instead.', inputSchema: obj({ record_id: str, data: str }) }, 'Write'],
  ]);
  check({ name: 'cloud-cli' }, [
    [{ name: 'access', description: 'Access operations - commands for role-based access control: listing roles, managing permissions at any scope.', inputSchema: obj({ command: str, parameters: { type: 'object' } }) }, 'Destructive'],
    [{ name: 'kv', description: 'Settings operations - commands for a key-value store, including locking/unlocking keys.', inputSchema: obj({ command: str, parameters: { type: 'object' } }) }, 'Destructive'],
    [{ name: 'queues', description: 'Queue operations - commands to manage message queues and topics.', inputSchema: obj({ command: str, parameters: { type: 'object' } }) }, 'Execute'],
  ]);
  check({ name: 'sql-admin', instructions: 'Administer a MySQL database.' }, [
    [{ name: 'modifyTable', description: 'Alter a table structure', inputSchema: obj({ table: str, operation: str }) }, 'Destructive'],
  ]);
  check({ name: 'cloud-logs' }, [
    [{ name: 'read_entries', description: 'Get log entries for the project.', inputSchema: obj({ filter: { type: 'string', description: 'Filter in the logging query syntax' } }) }, 'Execute'],
    [{ name: 'list_buckets', description: 'List log buckets.', inputSchema: obj({ filter: { type: 'string', description: 'Name prefix to keep' } }) }, 'Read'],
  ]);
  check({ name: 'log-store', instructions: 'Query logs and traces.' }, [
    [{ name: 'search_logs', description: 'Search log lines.', inputSchema: obj({ query: str, since: str }) }, 'Execute'],
    [{ name: 'search_help', description: 'Search the documentation.', inputSchema: obj({ query: str }) }, 'Read'],
  ]);
  check({ name: 'scene-editor' }, [
    [{ name: 'run_many', description: 'Run an ordered list of tool calls as one step, stopping at the first error.', inputSchema: obj({ calls: { type: 'array' } }) }, 'Destructive'],
    [{ name: 'delete_node', description: 'Delete a node from the scene.' }, 'Destructive'],
    [{ name: 'sync_products', description: 'Batch sync of products.', inputSchema: obj({ create: { type: 'array' }, update: { type: 'array' }, delete: array }) }, 'Destructive'],
    [{ name: 'load_rows', description: 'Load rows from a CSV file into a table.', inputSchema: obj({ table: str, path: str, truncateFirst: { type: 'boolean' } }) }, 'Destructive'],
  ]);
});

/** Whether a call of `tool` with `args` is held under the recommended policy (the real engine decides). */
function heldBy(tools: ToolDefinition[], server: string) {
  const got = classifyTools(tools, { name: server });
  const engine = new Engine({ policy: new CompiledPolicy(PolicySchema.parse(recommendPolicy(got, tools, server)), 'holes'), counters: new MemoryCounterStore() });
  return (tool: string, args: Record<string, unknown>) => {
    const e = engine.evaluate({ tool, args, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: server }, now: 0 });
    return { held: e.verdict !== 'allow', limited: (e.limits ?? e.entry?.checks.limits ?? []).length > 0, got: got.find((c) => c.name === tool)! };
  };
}

describe('a request tool whose method enum offers DELETE is held by allowlist', () => {
  const tools: ToolDefinition[] = [
    { name: 'graph_call', description: 'Call any path of the directory API with the method you choose.', inputSchema: obj({ path: str, method: { type: 'string', enum: ['get', 'post', 'patch', 'delete'] }, body: { type: 'object' } }) },
    { name: 'webhook_add', description: 'Register a webhook.', inputSchema: obj({ target: str, method: { type: 'string', enum: ['POST', 'PUT'] } }) },
  ];
  const held = heldBy(tools, 'dir-api');
  it('is Destructive with per-method categories, the reason in the rationale', () => {
    const { got } = held('graph_call', {});
    assert.equal(got.category, 'Destructive', got.rationale);
    assert.deepEqual(got.actions, { param: 'method', values: { get: 'Read', post: 'Execute', patch: 'Execute', delete: 'Destructive' }, safe: ['get', 'post', 'patch'] });
    assert.match(got.rationale, /`method` argument can also be delete/);
  });
  it('holds delete, DELETE and a missing method; limits the others', () => {
    for (const args of [{ method: 'delete' }, { method: 'DELETE' }, {}, { method: 'purge' }]) assert.equal(held('graph_call', args).held, true, JSON.stringify(args));
    for (const method of ['get', 'post', 'patch']) {
      const d = held('graph_call', { method });
      assert.equal(d.held, false, method);
      assert.equal(d.limited, true, method);
    }
  });
  it('leaves a method enum without DELETE alone', () => assert.equal(held('webhook_add', {}).got.actions, undefined));
});

describe('a public sharing link opens access: the recommended rule holds it', () => {
  const tools: ToolDefinition[] = [
    { name: 'publish_chart', description: 'Create a public sharing link for a chart and return its URL.', inputSchema: obj({ chart_id: str }) },
    { name: 'add_image', description: 'Add an image to a record. For big images, pass a public URL instead.', inputSchema: obj({ record_id: str, data: str }) },
  ];
  const held = heldBy(tools, 'bi-board');
  it('holds the link maker, with the reason in the rationale', () => {
    const d = held('publish_chart', { chart_id: 'c1' });
    assert.equal(d.held, true);
    assert.equal(d.got.hold?.kind, 'opens');
    assert.match(d.got.rationale, /public sharing link.*removing a protection/);
  });
  it('holds an update whose visibility enum offers public, not a create', () => {
    const more = heldBy([
      { name: 'set_visibility', description: 'Change who can see a repository.', inputSchema: obj({ repo: str, visibility: { type: 'string', enum: ['private', 'internal', 'public'] } }) },
      { name: 'create_repo', description: 'Create a repository.', inputSchema: obj({ name: str, visibility: { type: 'string', enum: ['private', 'public'] } }) },
    ], 'code-host');
    // Held either by the danger cue ('opens') or, since round seven, as Destructive (a permissions change: strict-shape.ts).
    const got = more('set_visibility', { repo: 'r', visibility: 'private' }).got;
    assert.ok(got.hold?.kind === 'opens' || got.category === 'Destructive', got.rationale);
    assert.equal(more('set_visibility', { repo: 'r', visibility: 'private' }).held, true);
    assert.equal(more('create_repo', { name: 'r' }).held, false);
  });
  it('does not hold a tool that only mentions a public URL', () => assert.equal(held('add_image', { record_id: 'r' }).held, false));
});

describe('a multi-action tool whose values are not an enum: oneOf consts, or the list its own description gives', () => {
  const tools: ToolDefinition[] = [
    { name: 'agenda_item', description: 'Work with agenda items.', inputSchema: obj({ action: { type: 'string', description: 'One of: list, create, update or delete' }, id: str }) },
    { name: 'note_tool', description: 'Notes.', inputSchema: obj({ op: { type: 'string', oneOf: [{ const: 'get' }, { const: 'create' }, { const: 'remove' }] }, id: str }) },
    { name: 'purse', description: 'Purse actions for a crypto wallet.', inputSchema: obj({ action: { type: 'string', enum: ['history', 'send'] }, to: str, amount: { type: 'number' } }) },
    { name: 'memo', description: 'Memos.', inputSchema: obj({ action: { type: 'string', description: 'What to do, for example read the memo' }, id: str }) },
  ];
  const held = heldBy(tools, 'misc-actions');
  it('reads values from a description list and from oneOf consts, and holds all but the safe ones', () => {
    assert.deepEqual(held('agenda_item', {}).got.actions?.safe, ['list', 'create', 'update']);
    assert.deepEqual(held('note_tool', {}).got.actions?.safe, ['get', 'create']);
    for (const args of [{ action: 'delete' }, { action: 'purge' }, {}]) assert.equal(held('agenda_item', args).held, true, JSON.stringify(args));
    assert.equal(held('agenda_item', { action: 'list' }).held, false);
    assert.equal(held('note_tool', { op: 'remove' }).held, true);
  });
  it('a value that sends money on a wallet that takes an amount is Financial, held; its reads are not', () => {
    const { got } = held('purse', {});
    assert.equal(got.category, 'Financial', got.rationale);
    assert.equal(held('purse', { action: 'send', amount: 5 }).held, true);
    assert.equal(held('purse', { action: 'history' }).held, false);
  });
  it('a bare clear, empty or flush among the actions empties what the tool holds: held', () => {
    const got = classifyTools([{ name: 'shelf', description: 'Shelve work in progress.', inputSchema: obj({ action: { type: 'string', enum: ['save', 'list', 'apply', 'clear'] } }) }], { name: 'vcs' })[0];
    assert.equal(got.category, 'Destructive', got.rationale);
    assert.deepEqual(got.actions?.safe, ['save', 'list', 'apply']);
  });
  it('prose that is not a list makes no action values', () => assert.equal(held('memo', {}).got.actions, undefined));
});

describe('a Read that uses a credential is not a Read that returns one (over-holds)', () => {
  const tools: ToolDefinition[] = [
    { name: 'list_workspaces', description: 'List all workspaces accessible with the current credentials.' },
    { name: 'list_apps', description: 'List the apps attached to my API key.' },
    { name: 'list_shops', description: 'List shops. It returns every shop the API key can see.' },
    { name: 'list_pools', description: 'Lists every pool the server has credentials for. Passwords are never returned.' },
    { name: 'show_config', description: 'Shows the API keys and passwords configured for the service.' },
    { name: 'list_secrets', description: 'List stored secrets by name. Values are never shown.' },
  ];
  const held = heldBy(tools, 'saas-admin');
  for (const name of ['list_workspaces', 'list_apps', 'list_shops', 'list_pools']) it(`${name} is allowed`, () => assert.equal(held(name, {}).held, false, held(name, {}).got.rationale));
  it('a description that says it shows the keys still holds', () => assert.equal(held('show_config', {}).held, true));
  it('a name that says secrets holds whatever the description says (text never lowers the name)', () => assert.equal(held('list_secrets', {}).held, true));
});

describe('a light removal is not held for its name\'s "remove"; a delete still is (over-holds)', () => {
  const tools: ToolDefinition[] = [
    { name: 'remove_label_from_card', description: 'Remove a label from a card.' },
    { name: 'remove_watcher', description: 'Remove a watcher from an issue.' },
    { name: 'delete_mail_filter', description: 'Delete a mail filter.' },
    { name: 'remove_board', description: 'Remove a board and all its cards.' },
  ];
  const held = heldBy(tools, 'boards');
  it('takes a label or a watcher off without a hold, with the ordinary limit', () => {
    for (const name of ['remove_label_from_card', 'remove_watcher']) {
      const d = held(name, {});
      assert.equal(d.held, false, d.got.rationale);
      assert.equal(d.limited, true, name);
    }
  });
  it('holds a delete of a light thing and a remove of a heavy one', () => {
    assert.equal(held('delete_mail_filter', {}).held, true);
    assert.equal(held('remove_board', {}).held, true);
  });
});

describe('the rationale says why, and a plausible reading taken over a stated one counts as leaning strict', () => {
  const got = classifyTools([
    { name: 'router', description: 'Key vault operations. Includes CRUD operations on secrets.', inputSchema: obj({ command: str }) },
    { name: 'quote_gas', description: 'Returns the gas estimate. Costs $0.02 in USDC.' },
  ], { name: 'mixed' });
  it('an open-ended call that lists deleting', () => {
    assert.match(got[0].rationale, /lists “crud” among what that does.*stricter is recommended/);
    assert.ok(got[0].signals.includes('leaned_strict'));
  });
  it('a per-call cost is stated, not leaned', () => {
    assert.match(got[1].rationale, /costs money \(“costs \$0\.02”\)/);
    assert.ok(!got[1].signals.includes('leaned_strict'));
  });
});
