import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyTools, type ToolDefinition } from '../src/risk/index.js';
import { bool, check, enumOf, obj, says, str } from './helpers/risk-cases.js';
import { scoreServer, type Label } from './helpers/safety.js';

/**
 * Round five of issue 24 (src/risk/classify/strict-broad.ts): broad structural classes, each shown
 * with invented tools (none taken from a blind set), so they are judged as kinds of tool rather than
 * as the tools they were drawn from. Each class only makes a tool stricter; the pairs beside them say
 * what must stay as it was.
 */

describe('a URL the tool loads in a browser is navigation (Execute), whatever report comes back', () => {
  check({ name: 'site-speed', instructions: 'Scores pages with Lighthouse.' }, [
    [{ name: 'get_speed_index', description: 'Get the speed index of a web page.', inputSchema: obj({ url: str }) }, 'Execute'],
    [{ name: 'list_audit_categories', description: 'List the audit categories that can be scored.' }, 'Read'],
  ]);
  check({ name: 'seo-kit' }, [
    [{ name: 'check_meta_tags', description: 'Check the meta tags of a site by loading it in a headless browser.', inputSchema: obj({ website: str }) }, 'Execute'],
    // A plain fetch names no browser: it stays what it was.
    [{ name: 'get_page_title', description: 'Return the title of a page.', inputSchema: obj({ url: str }) }, 'Read'],
  ]);
  says({ name: 'site-speed', instructions: 'Scores pages with Lighthouse.' }, { name: 'measure_cls', description: 'Measure layout shift for a page.', inputSchema: obj({ url: str }) }, 'Execute', /loads the URL in its `url` argument in a browser/);
});

describe('a query over logs, metrics or traces written in a syntax is Execute', () => {
  check({ name: 'obs-hub' }, [
    [{ name: 'find_log_lines', description: 'Find log lines. The query uses the hub syntax, e.g. "env:prod level:error".', inputSchema: obj({ query: str, limit: { type: 'number' } }) }, 'Execute'],
    [{ name: 'get_metric_points', description: 'Fetch metric data points.', inputSchema: obj({ filter: { type: 'string', description: 'Filter such as metric.type = "cpu" AND zone = "a"' } }) }, 'Execute'],
    // A plain word search over logs, or one that takes natural language, is left as a read.
    [{ name: 'search_log_words', description: 'Search logs for a word.', inputSchema: obj({ query: str }) }, 'Read'],
    [{ name: 'ask_traces', description: 'Search traces; the query can be natural language or trace syntax like "svc:api".', inputSchema: obj({ query: str }) }, 'Read'],
  ]);
});

describe('a request to a URL with a method, a prompt to another model, a template with logic: Execute', () => {
  check({ name: 'dev-kit' }, [
    [{ name: 'diff_endpoints', description: 'Compare two endpoints side by side.', inputSchema: obj({ url_left: str, url_right: str, method: str }) }, 'Execute'],
    [{ name: 'ask_second_opinion', description: 'Get a second opinion from a local LLM.', inputSchema: obj({ prompt: str }) }, 'Execute'],
    [{ name: 'render_mail_body', description: 'Render a message body from a template; supports {{#each}} loops and helpers.', inputSchema: obj({ template: str, data: { type: 'object' } }) }, 'Execute'],
    [{ name: 'show_report_ui', description: 'Opens the coverage report in your default browser.', inputSchema: obj({ dir: str }) }, 'Execute'],
    // A template without logic is text; "open in the browser" as an adjective is not opening one.
    [{ name: 'format_greeting', description: 'Put a name into a greeting template.', inputSchema: obj({ template: str, name: str }) }, 'Read'],
    [{ name: 'list_tabs', description: 'Get the pages open in the browser.' }, 'Read'],
  ]);
});

describe('input to a shell, a run of a pipeline, a call over RPC, a browser session, a browser driven to a URL: Execute', () => {
  check({ name: 'workbench' }, [
    [{ name: 'console_send_line', description: 'Send a line to the open shell.', inputSchema: obj({ id: str, line: str }) }, 'Execute'],
    [{ name: 'pty_press', description: 'Press a key in a terminal session.', inputSchema: obj({ id: str, key: str }) }, 'Execute'],
    [{ name: 'new_workflow_run', description: 'Create a workflow run.', inputSchema: obj({ workflow: str }) }, 'Execute'],
    [{ name: 'resume_build', description: 'Resume a paused build.', inputSchema: obj({ id: str }) }, 'Execute'],
    [{ name: 'rpc_call', description: 'Call a method on a JSON-RPC endpoint.', inputSchema: obj({ url: str, method: str, params: { type: 'array' } }) }, 'Execute'],
    [{ name: 'qa_walk', description: 'Launches a browser, navigates to the URL and reports broken links.', inputSchema: obj({ url: str }) }, 'Execute'],
    // A run looked up, or traffic resumed, runs nothing.
    [{ name: 'get_workflow_run', description: 'Get a workflow run.', inputSchema: obj({ id: str }) }, 'Read'],
  ]);
  check({ name: 'grid-browser' }, [
    [{ name: 'start_session', description: 'Start a remote browser session on the grid.', inputSchema: obj({ capabilities: { type: 'object' } }) }, 'Execute'],
  ]);
});

describe('switching off a protection is Destructive: silencing alerts, passing a gate, rolling back, a flag that deletes', () => {
  check({ name: 'pager-hub', instructions: 'Alerting and on-call.' }, [
    [{ name: 'add_snooze', description: 'Snooze a noisy alert for a while.', inputSchema: obj({ alert: str, minutes: { type: 'number' } }) }, 'Destructive'],
    [{ name: 'new_downtime', description: 'Schedule a maintenance window.', inputSchema: obj({ start: str, end: str }) }, 'Destructive'],
    [{ name: 'list_alerts', description: 'List firing alerts.' }, 'Read'],
  ]);
  check({ name: 'team-chat' }, [
    // Muting a channel's notifications is a preference, not alerting switched off; skipping a flashcard review passes no gate.
    [{ name: 'mute_channel', description: 'Mute notifications for a channel.', inputSchema: obj({ channel: str }) }, 'Write'],
    [{ name: 'skip_review', description: 'Skip today\'s review of a card.', inputSchema: obj({ card: str }) }, 'Write'],
  ]);
  check({ name: 'ci-hub' }, [
    [{ name: 'pass_release_gate', description: 'Mark a release stage as checked.', inputSchema: obj({ stage: str }) }, 'Destructive'],
    [{ name: 'stage_op', description: 'Approve a manual checkpoint in a run.', inputSchema: obj({ run: str }) }, 'Destructive'],
    [{ name: 'operate_rollout', description: 'Operate a rollout.', inputSchema: obj({ step: { type: 'object', properties: { kind: { type: 'string', description: 'One of: PAUSE, RESUME, ROLLBACK' } } } }) }, 'Destructive'],
    [{ name: 'land_patch', description: 'Land a patch on the main line.', inputSchema: obj({ id: str, remove_source_branch: bool }) }, 'Destructive'],
    // Setting the same flag on an update deletes nothing now.
    [{ name: 'update_patch', description: 'Update a patch.', inputSchema: obj({ id: str, remove_source_branch: bool }) }, 'Write'],
  ]);
  check({ name: 'docs-cms' }, [
    [{ name: 'draft_discard_page', description: 'Drop a draft page version.', inputSchema: obj({ id: str }) }, 'Destructive'],
    [{ name: 'folder', description: 'Folder ops: list/get/move/delete_item.' }, 'Destructive'],
    [{ name: 'fetch_any', description: 'Perform an HTTP request to any endpoint.', inputSchema: obj({ url: str, method: str, body: str }) }, 'Destructive'],
  ]);
});

describe('money in other words is Financial', () => {
  check({ name: 'text-tools' }, [
    [{ name: 'score_toxicity', description: 'Score text for toxicity. Billed per request ($0.002).', inputSchema: obj({ text: str }) }, 'Financial'],
    [{ name: 'upscale_photo', description: 'Upscale a photo with a hosted model; this spends paid API credits.', inputSchema: obj({ image: str }) }, 'Financial'],
    [{ name: 'count_words', description: 'Count words; not billed per request.', inputSchema: obj({ text: str }) }, 'Read'],
    [{ name: 'get_credit_usage', description: 'Show how the account uses credits this month.' }, 'Read'],
  ]);
  check({ name: 'voice-lines' }, [
    [{ name: 'add_phone_number', description: 'Adds a phone number.', inputSchema: obj({ area_code: str }) }, 'Financial'],
    [{ name: 'add_contact_phone_number', description: 'Add a phone number to a contact.', inputSchema: obj({ contact: str, number: str }) }, 'Write'],
  ]);
  check({ name: 'futures-exchange', instructions: 'Trade perpetual futures on the exchange.' }, [
    [{ name: 'modify_order', description: 'Change the price of a resting order.', inputSchema: obj({ order_id: str, price: { type: 'number' } }) }, 'Financial'],
    [{ name: 'set_kill_switch', description: 'Arm a switch that cancels all open orders if the session drops.', inputSchema: obj({ enabled: bool }) }, 'Financial'],
    [{ name: 'run_tool', description: 'Run any tool of the catalog by name with the given arguments.', inputSchema: obj({ name: str, args: { type: 'object' } }) }, 'Financial'],
  ]);
});

describe('a multi-action tool holds the values its text or flags make dangerous', () => {
  const tools: ToolDefinition[] = [
    { name: 'uptime_checks', description: 'Manage uptime checks and their alerts. Actions: list, get, delete, mute, unmute.', inputSchema: obj({ action: enumOf('list', 'get', 'delete', 'mute', 'unmute'), id: str }) },
    { name: 'canvas_layer', description: 'Edit a canvas layer: paint a pixel, erase a pixel, wipe a whole layer.', inputSchema: obj({ action: enumOf('paint_pixel', 'erase_pixel', 'wipe_layer', 'list_layers'), layer: str }) },
    { name: 'photo_sets', description: 'Curate photo sets.', inputSchema: obj({ action: enumOf('list', 'update', 'delete'), name: str, dropPhotos: bool }) },
    { name: 'albums', description: 'Curate albums.', inputSchema: obj({ action: enumOf('list', 'rename', 'update', 'delete'), name: str, deletePhotos: { type: 'array', description: 'action:"update" — photo files to delete from the album.' } }) },
    { name: 'event_stores', description: 'Manage event stores (retention, sampling). Actions: list, get, update.', inputSchema: obj({ action: enumOf('list', 'get', 'update'), name: str, config: { type: 'object' } }) },
  ];
  const labels: Record<string, Label> = {
    uptime_checks: { category: 'Destructive', actions: { param: 'action', values: { list: 'Read', get: 'Read', delete: 'Destructive', mute: 'Destructive', unmute: 'Write' } } },
    canvas_layer: { category: 'Destructive', actions: { param: 'action', values: { paint_pixel: 'Write', erase_pixel: 'Write', wipe_layer: 'Destructive', list_layers: 'Read' } } },
    photo_sets: { category: 'Destructive', actions: { param: 'action', values: { list: 'Read', update: 'Destructive', delete: 'Destructive' } } },
    albums: { category: 'Destructive', actions: { param: 'action', values: { list: 'Read', rename: 'Write', update: 'Destructive', delete: 'Destructive' } } },
    event_stores: { category: 'Destructive', actions: { param: 'action', values: { list: 'Read', get: 'Read', update: 'Destructive' } } },
  };
  for (const s of scoreServer(tools, { name: 'studio' }, (t) => labels[t.name])) {
    it(`${s.tool.name}: every dangerous value is held, the reads are not (where the tool has an allowlist)`, () => {
      assert.equal(s.unsafe, false, s.got.rationale);
      // A tool whose lexicon reads no action as dangerous as the tool (event_stores: its update is Write by name) is held whole.
      if (s.tool.name !== 'event_stores') assert.ok(s.got.actions?.safe.some((v) => /^list/.test(v)), `a read stays in the allowlist: ${s.got.rationale}`);
    });
  }
  it('a list of what to delete that names the actions using it takes only those out of the allowlist', () => {
    const [albums] = classifyTools([tools[3]], { name: 'studio' });
    assert.deepEqual(albums.actions?.safe, ['list', 'rename'], albums.rationale);
  });
});
