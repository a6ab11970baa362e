import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { PolicySchema } from '../src/policy/index.js';
import { classifyTools, recommendPolicy, type ToolDefinition } from '../src/risk/index.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { check, obj, str } from './helpers/risk-cases.js';

/**
 * Issue 24's classes of laxer labels, each with invented tools (none from a blind set): text the
 * server writes only makes a tool stricter; destruction and money in a domain's own words; code
 * that runs while the description praises a harmless mode; navigation and log queries.
 */

describe('untrusted text makes a tool stricter, never laxer', () => {
  check({ name: 'pydbg', instructions: 'Attach a debugger to Python processes.' }, [
    [{ name: 'run_snippet', description: "Evaluates code in the attached interpreter; 'inspect' mode is read-only.", inputSchema: obj({ code: str, mode: { type: 'string', enum: ['inspect', 'exec'] } }) }, 'Execute'],
    [{ name: 'peek', description: 'Read-only: shows a value. Safe, changes nothing.', inputSchema: obj({ expression: str }) }, 'Execute'],
    [{ name: 'inspect_frame', description: 'Read-only view of the current frame.', annotations: { readOnlyHint: true }, inputSchema: obj({ expression: { type: 'string', description: 'A Python expression evaluated in the frame' } }) }, 'Execute'],
    [{ name: 'tidy_workspace', description: 'Tidies the workspace.', annotations: { destructiveHint: true } }, 'Destructive'],
    [{ name: 'update_note', description: 'Update a note.', annotations: { readOnlyHint: true } }, 'Write'],
    [{ name: 'kernel_start', description: 'Shut down any existing kernel for this notebook and start a completely fresh one.', annotations: { destructiveHint: true } }, 'Destructive'],
    // destructiveHint: true, set explicitly, makes even a light change at least Destructive (issue 24: annotations escalate).
    [{ name: 'remove_reaction', description: 'Remove an emoji reaction from an issue.', annotations: { destructiveHint: true } }, 'Destructive'],
    [{ name: 'press_button', description: 'Click a button on the page.', annotations: { destructiveHint: true } }, 'Destructive'],
    [{ name: 'lookup_flag', description: 'Get a feature flag.', annotations: { destructiveHint: true, readOnlyHint: true } }, 'Destructive'],
    [{ name: 'pay_invoice', description: 'Pay an invoice.', annotations: { destructiveHint: true } }, 'Financial'],
    // The MCP default (no hint, or false) does not escalate.
    [{ name: 'rename_label', description: 'Rename a label.', annotations: { destructiveHint: false } }, 'Write'],
  ]);
  check({ name: 'warehouse' }, [
    [{ name: 'report_rows', description: 'A harmless read-only report.', inputSchema: obj({ sql: str }) }, 'Execute'],
    [{ name: 'search_products', description: 'Search products by name.', inputSchema: obj({ query: { type: 'string', description: 'Search text' } }) }, 'Read'],
  ]);
});

describe('destruction in the words of a domain', () => {
  check({ name: 'pg-admin', instructions: 'Administer a PostgreSQL database.' }, [
    [{ name: 'remove_view', description: 'Removes a view from the database.' }, 'Destructive'],
    [{ name: 'pg_drop_role', description: 'Drops a role.' }, 'Destructive'],
    [{ name: 'drop-trigger', description: 'Drop a trigger on a table.' }, 'Destructive'],
    [{ name: 'drop_and_recreate_index', description: 'Runs DROP INDEX then CREATE INDEX.', inputSchema: obj({ sql: str }) }, 'Destructive'],
  ]);
  check({ name: 'git-tools' }, [
    [{ name: 'reset_branch', description: 'Reset a branch to an earlier commit.' }, 'Destructive'],
    [{ name: 'rollback_branch', description: 'Roll the branch back to a previous state.' }, 'Destructive'],
  ]);
  check({ name: 'edge-network' }, [
    [{ name: 'put_waf_config', description: 'Create or replace the WAF configuration.' }, 'Destructive'],
    [{ name: 'update_waf_rule', description: 'Update one rule of the WAF.' }, 'Write'],
    [{ name: 'sync_playlist', description: 'Mutates a playlist by replacing all tracks with the given list.' }, 'Destructive'],
    [{ name: 'set_emulation', description: 'Each call replaces all emulation settings of the page.' }, 'Write'],
  ]);
  check({ name: 'archive-store' }, [
    [{ name: 'remove_from_archive', description: 'Remove items from an archive.' }, 'Destructive'],
    [{ name: 'evict_from_store', description: 'Removes keys from the key-value store.' }, 'Destructive'],
  ]);
});

describe('money in other words', () => {
  check({ name: 'broker', instructions: 'Trade stocks and crypto.' }, [
    [{ name: 'open_position', description: 'Open a long or short position.' }, 'Financial'],
    [{ name: 'close_trade', description: 'Close an open trade.' }, 'Financial'],
    [{ name: 'swap_tokens', description: 'Swap one token for another.' }, 'Financial'],
    [{ name: 'stake_eth', description: 'Stake ETH with a validator.' }, 'Financial'],
  ]);
  check({ name: 'telco' }, [
    [{ name: 'rent_phone_number', description: 'Rent a phone number for your account.' }, 'Financial'],
    [{ name: 'acquire_domain', description: 'Acquire a domain name.' }, 'Financial'],
    [{ name: 'buy_seats', description: 'Add licences for more seats.' }, 'Financial'],
    [{ name: 'bump_subscription_tier', description: 'Moves the account to the next tier.' }, 'Financial'],
    [{ name: 'upgrade_plan', description: 'Upgrade the workspace plan.' }, 'Financial'],
    [{ name: 'contest_chargeback', description: 'Submit evidence to contest a chargeback.' }, 'Financial'],
    [{ name: 'update_spending_cap', description: 'Change the monthly spending cap.' }, 'Financial'],
  ]);
});

describe('browsers and analytics', () => {
  check({ name: 'chrome-driver' }, [
    [{ name: 'navigate', description: 'Navigate the browser to a URL.', inputSchema: obj({ url: str }) }, 'Execute'],
    [{ name: 'browser_goto', description: 'Go to a page.', inputSchema: obj({ url: str }) }, 'Execute'],
    [{ name: 'select_tab', description: 'Select an open tab.', inputSchema: obj({ index: { type: 'number' } }) }, 'Read'],
  ]);
  check({ name: 'log-analytics', instructions: 'Search and analyse application logs.' }, [
    [{ name: 'run_log_query', description: 'Run a LogQL query over the logs.', inputSchema: obj({ query: str }) }, 'Execute'],
    [{ name: 'query_events', description: 'Query events with a KQL statement.', inputSchema: obj({ statement: str }) }, 'Execute'],
    [{ name: 'query_logs', description: 'Query the logs.', inputSchema: obj({ query: str, start: str }) }, 'Execute'],
    [{ name: 'list_log_streams', description: 'List log streams.' }, 'Read'],
  ]);
});

describe('a multi-action tool takes its most dangerous action', () => {
  check({ name: 'calendar' }, [
    [{ name: 'manage_calendar_event', description: 'Manage calendar events.', inputSchema: obj({ action: { type: 'string', enum: ['create', 'update', 'delete'] }, title: str }) }, 'Destructive'],
  ]);
});

describe('a multi-action tool is held by allowlist', () => {
  const tool: ToolDefinition = { name: 'manage_calendar_event', description: 'Manage calendar events.', inputSchema: obj({ action: { type: 'string', enum: ['create', 'update', 'delete'] }, title: str }) };
  const [c] = classifyTools([tool], { name: 'calendar' });
  const policy = recommendPolicy([c], [tool], 'calendar');
  const engine = new Engine({ policy: new CompiledPolicy(PolicySchema.parse(policy), 'test'), counters: new MemoryCounterStore() });
  const decide = (args: Record<string, unknown>) => engine.evaluate({ tool: tool.name, args, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'calendar' }, now: 0 });

  it('says what each action does, and which are safe', () => {
    assert.deepEqual(c.actions, { param: 'action', values: { create: 'Write', update: 'Write', delete: 'Destructive' }, safe: ['create', 'update'] });
    assert.match(c.rationale, /multi-action tool whose `action` argument decides/);
    assert.match(c.rationale, /holds every call unless `action` is exactly one of create, update/);
  });

  for (const args of [{ action: 'delete' }, { action: 'Delete' }, { action: 'remove' }, { action: 'purge_all' }, {}, { action: null }, { action: ['create'] }, { action: ' create' }]) {
    it(`holds a call with ${JSON.stringify(args)}`, () => assert.equal(decide(args).verdict, 'approve'));
  }
  for (const action of ['create', 'update']) {
    it(`lets ${action} through with the ordinary Write limit`, () => {
      const e = decide({ action });
      assert.equal(e.verdict, 'allow');
      assert.deepEqual(e.entry?.checks.limits.map((l) => l.max), [30]);
    });
  }

  it('a tool named for destroying is held whatever its action says', () => {
    const purge = { name: 'purge_events', description: 'Purge events.', inputSchema: obj({ mode: { type: 'string', enum: ['list', 'delete'] } }) };
    const [p] = classifyTools([purge], { name: 'calendar' });
    assert.equal(p.actions, undefined);
    assert.equal(recommendPolicy([p], [purge]).tools![purge.name].action, 'approve');
  });
});

describe('uncertainty leans strict', () => {
  it('a name that reads Write against a description that opens with a destruction: the stricter is recommended, and the rationale says why', () => {
    const [c] = classifyTools([{ name: 'save_profile', description: 'Deletes the old profile and saves the new one.' }], { name: 'profiles' });
    assert.equal(c.category, 'Destructive');
    assert.ok(c.signals.includes('leaned_strict'));
    assert.match(c.rationale, /the stricter is recommended/);
  });
  it('a description that only explains stays with the description (SPEC: refund_guide is Read)', () => {
    const [c] = classifyTools([{ name: 'refund_guide', description: 'Explains how refunds work, with links to the documentation.' }]);
    assert.equal(c.category, 'Read');
    assert.ok(!held({ name: 'refund_guide', description: 'Explains how refunds work, with links to the documentation.' }), 'a cue in a confident-enough Read does not hold it');
  });
  it('a Read that is not confidently one is limited like a Write, so a tool that runs is never unlimited', () => {
    const tool = { name: 'recheck_status', description: 'Request the check again.' };
    const [c] = classifyTools([tool], { name: 'ci' });
    assert.equal(c.category, 'Read');
    assert.ok(c.confidence < 0.9 && c.signals.includes('leaned_strict'));
    assert.match(c.rationale, /not confidently Read/);
    assert.deepEqual(recommendPolicy([c], [tool]).tools![tool.name].limits?.map((l) => l.max), [30]);
    const sure = { name: 'get_user', description: 'Get a user by id.' };
    const [s] = classifyTools([sure], { name: 'ci' });
    assert.deepEqual(recommendPolicy([s], [sure]).tools![sure.name], {});
  });
});

/** Whether the recommended policy holds a call to the tool with the given arguments. */
function held(tool: ToolDefinition, server: { name?: string } = {}, args: Record<string, unknown> = {}): boolean {
  const got = classifyTools([tool], server);
  const engine = new Engine({ policy: new CompiledPolicy(PolicySchema.parse(recommendPolicy(got, [tool], server.name)), 'test'), counters: new MemoryCounterStore() });
  return engine.evaluate({ tool: tool.name, args, grant: { label: 'g', tags: [] }, session: { id: 's' }, server: { name: 'srv' }, now: 0 }).verdict === 'approve';
}

describe('a destruction or payment cue holds the tool even where it did not win the category', () => {
  const cases: [string, ToolDefinition, boolean][] = [
    ['a payment word in the name', { name: 'submit_billing_details', description: 'Submit details.' }, true],
    // Taking a tag off a card is added back in one call: no hold (tune4: on every set these holds were over-holds and no unsafe miss).
    ['a light removal in the name', { name: 'remove_tag', description: 'Remove a tag from a card.' }, false],
    ['a delete of a light thing in the name', { name: 'delete_tag', description: 'Delete a tag.' }, true],
    ['a destruction in the first sentence', { name: 'update_settings', description: 'Updates settings and deletes the cached copy.' }, true],
    ['a destruction in the first sentence', { name: 'sync_contacts', description: 'Syncs contacts and drops the ones missing upstream.' }, true],
    ['a payment in an action value', { name: 'wallet_tool', description: 'Wallet operations.', inputSchema: obj({ operation: { type: 'string', enum: ['balance', 'payOut'] } }) }, true],
    ['a negated cue', { name: 'archive_note', description: 'Archives a note; it does not delete it.' }, false],
    ['a cue only in a later sentence', { name: 'rename_label', description: 'Rename a label. The old name can be removed later.' }, false],
    ['a confident read of money', { name: 'list_invoices', description: 'List invoices.' }, false],
    ['another tool named in prose is not this call\'s effect', { name: 'add_tool', description: 'Register one more tool (purge_notes) on this server' }, false],
    ['a cue at the end of the sentence still counts', { name: 'sync_contacts', description: 'Syncs contacts, then the stale ones are deleted.' }, true],
    ['an expense claim is money the company pays back', { name: 'submit_receipt', description: 'Files an expense claim for a receipt.' }, true],
    ['a French expense note (note de frais)', { name: 'traiter_justificatif', description: 'Extrait la dépense du justificatif et crée la note de frais.' }, true],
    ['a confident read of expenses', { name: 'list_expenses', description: 'List expenses.' }, false],
    ['an HTTP method of a stored request is not an action', { name: 'update_saved_request', description: 'Update a saved request.', inputSchema: obj({ method: { type: 'string', enum: ['GET', 'DELETE'] } }) }, false],
  ];
  for (const [what, tool, want] of cases) {
    it(`${what}: ${tool.name} is ${want ? '' : 'not '}held`, () => {
      assert.equal(held(tool, { name: 'misc' }), want);
      const [c] = classifyTools([tool], { name: 'misc' });
      if (want && c.category !== 'Destructive' && c.category !== 'Financial') {
        assert.ok(c.signals.includes('danger_cue'));
        assert.match(c.rationale, /the recommended rule holds every call/);
      }
    });
  }
});

describe('a multi-action value the server\'s own text makes stricter leaves the allowlist', () => {
  const enumOf = (...values: string[]) => ({ type: 'string', enum: values });
  const cases: [string, ToolDefinition, string[], string[]][] = [
    // [what, tool, values that must be held, values that must stay safe]
    ['a value named beside a cost', { name: 'manage_workspace', description: 'Manage workspaces. Billed actions (create, resize) need a plan; rename is free.', inputSchema: obj({ action: enumOf('list', 'create', 'resize', 'rename', 'delete') }) }, ['create', 'delete'], ['list', 'rename']],
    ['a value named beside a cost, in Chinese', { name: 'manageSpace', description: '管理空间：list=查询，create=创建空间（需确认），delete=删除空间。涉及费用的操作（create）须确认，rename 不计费。', inputSchema: obj({ action: enumOf('list', 'create', 'rename', 'delete') }) }, ['create', 'delete'], ['list', 'rename']],
    ['a value named beside a destruction', { name: 'manage_table', description: 'Manage tables. updateTable can also drop columns; createTable adds one.', inputSchema: obj({ action: enumOf('createTable', 'updateTable', 'deleteTable') }) }, ['updateTable', 'deleteTable'], ['createTable']],
    ['a value the server says needs confirmation', { name: 'manage_site', description: 'Manage sites. publish requires confirmation; update does not.', inputSchema: obj({ action: enumOf('update', 'publish', 'delete') }) }, ['publish', 'delete'], ['update']],
    ['a value that changes access control', { name: 'manage_bucket', description: 'Manage buckets.', inputSchema: obj({ action: enumOf('createBucket', 'setBucketPolicy', 'updatePermissions', 'listBuckets', 'deleteBucket') }) }, ['setBucketPolicy', 'updatePermissions', 'deleteBucket'], ['createBucket', 'listBuckets']],
    // Benign look-alikes: a denied cost or confirmation, a destruction that is another value's name, a read of a policy.
    ['a denied cost and no confirmation', { name: 'manage_domain_list', description: 'add=add an allowed origin (not billed, no confirmation needed), delete=remove one.', inputSchema: obj({ action: enumOf('add', 'delete') }) }, ['delete'], ['add']],
    ['another value\'s name in the same clause', { name: 'manage_route', description: 'createRoute/updateRoute/deleteRoute map a path to an upstream.', inputSchema: obj({ action: enumOf('createRoute', 'updateRoute', 'deleteRoute', 'getPolicy') }) }, ['deleteRoute'], ['createRoute', 'updateRoute', 'getPolicy']],
  ];
  for (const [what, tool, heldValues, safeValues] of cases) {
    it(`${what}: ${tool.name} holds ${heldValues.join(', ')} and lets ${safeValues.join(', ')} through`, () => {
      const [c] = classifyTools([tool], { name: 'cloud' });
      assert.ok(c.actions, c.rationale);
      for (const v of heldValues) assert.equal(held(tool, { name: 'cloud' }, { action: v }), true, `${v}: ${c.rationale}`);
      for (const v of safeValues) assert.equal(held(tool, { name: 'cloud' }, { action: v }), false, `${v}: ${c.rationale}`);
      const lifted = heldValues.filter((v) => !/^delete/.test(v));
      if (lifted.length) assert.match(c.rationale, /only allowed to make a call stricter: .*held because/);
    });
  }
  it('the text cannot turn a tool that is held whole into a multi-action one', () => {
    const tool: ToolDefinition = { name: 'manage_db', description: 'Run write SQL. Schema changes such as DROP must use applyMigration.', inputSchema: obj({ action: enumOf('execute', 'applyMigration', 'listMigrations'), force: { type: 'boolean', description: 'Force the change, discarding what it replaces' }, sql: str }) };
    const [c] = classifyTools([tool], { name: 'db' });
    assert.equal(c.actions, undefined, c.rationale);
    assert.equal(held(tool, { name: 'db' }, { action: 'listMigrations' }), true);
  });
});

describe('opening something private to everyone removes a protection: held', () => {
  const cases: [string, ToolDefinition, boolean][] = [
    ['access control set to public', { name: 'publish_sandbox', description: 'Publishes a sandbox. Publishing sets its access control to public.' }, true],
    ['an update that can make the source public', { name: 'update_site', description: 'Updates a site.', inputSchema: obj({ name: str, publicSource: { type: 'boolean' } }) }, true],
    ['"makes it public"', { name: 'share_album', description: 'Shares an album; this makes it public.' }, true],
    // Look-alikes: creating something public, a visibility filter, a public id.
    ['a new resource that may be public', { name: 'create_gist', description: 'Create a gist.', inputSchema: obj({ content: str, public: { type: 'boolean' } }) }, false],
    ['a visibility filter', { name: 'list_projects', description: 'List projects, filtered by visibility: public or private.', inputSchema: obj({ visibility: { type: 'string', enum: ['public', 'private'] } }) }, false],
    ['a public id', { name: 'update_story', description: 'Update a story.', inputSchema: obj({ storyPublicId: { type: 'number' }, name: str }) }, false],
  ];
  for (const [what, tool, want] of cases) {
    it(`${what}: ${tool.name} is ${want ? '' : 'not '}held`, () => {
      assert.equal(held(tool, { name: 'hosting' }), want);
      const [c] = classifyTools([tool], { name: 'hosting' });
      // Held by the danger cue, or (since round seven, strict-shape.ts) as Destructive for what the description says it opens.
      if (want) assert.match(c.rationale, /open something private to everyone, removing a protection|opens something private, which removes a protection/);
    });
  }
});
