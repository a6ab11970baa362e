import { describe } from 'node:test';
import { bool, check, enumOf, obj, says, str } from './helpers/risk-cases.js';

/**
 * Round six of issue 24 (src/risk/classify/strict-domain.ts): destruction said in a domain's words,
 * overwrite semantics, access widened on an existing thing, approvals on a pull request, queues of the
 * server's own tools and calls that spend money when asked to. Every tool here is invented (no name or
 * description is taken from a blind set); each class has a lax neighbour that stays as it was.
 */
describe('a reset to defaults or an empty state loses what was there; a password, a counter or a view reset does not', () => {
  check({ name: 'robot-runtime' }, [
    [{ name: 'settings_reset', description: 'Reset all settings to factory defaults.', inputSchema: obj({ section: str }) }, 'Destructive'],
    [{ name: 'memory_bank_reset', description: 'Reset the learned memory bank of the planner.' }, 'Destructive'],
    [{ name: 'resetWidget', description: 'Reset a widget on a canvas to its default empty state.', inputSchema: obj({ widgetId: str }) }, 'Destructive'],
    [{ name: 'loop_reset', description: 'Reset the loop iteration counter and restart its timer.' }, 'Write'],
    [{ name: 'reset_user_password', description: 'Send a password reset mail to a user.', inputSchema: obj({ email: str }) }, 'Write'],
    [{ name: 'reset_map_zoom', description: 'Reset the map zoom.' }, 'Write'],
  ]);
  says({ name: 'robot-runtime' }, { name: 'planner_reset', description: 'Reset the planner state.' }, 'Destructive', /resets something to its defaults or an empty state/);
});

describe('rebasing, restoring an earlier version, clearing or merging cells, and the trash are destruction in a domain\'s words', () => {
  check({ name: 'vcs-tools' }, [
    [{ name: 'branch_rebase', description: 'Rebase the current branch on top of main.', inputSchema: obj({ onto: str }) }, 'Destructive'],
    [{ name: 'branch_merge', description: 'Merge a branch into the current one.', inputSchema: obj({ branch: str }) }, 'Write'],
  ]);
  check({ name: 'flows' }, [
    [{ name: 'restore_flow_revision', description: 'Restore an older revision of a flow into its working copy.', inputSchema: obj({ flowId: str, revisionId: str }) }, 'Destructive'],
    [{ name: 'restore_archived_flow', description: 'Unarchive a flow so it shows in lists again.', inputSchema: obj({ flowId: str }) }, 'Write'],
  ]);
  check({ name: 'tabular', instructions: 'Edit spreadsheets.' }, [
    [{ name: 'grid_clear_cells', description: 'Clear the cells of a range in a spreadsheet.', inputSchema: obj({ bookId: str, range: str }) }, 'Destructive'],
    [{ name: 'grid_merge_cells', description: 'Merge the cells of a range in a sheet.', inputSchema: obj({ bookId: str, range: str }) }, 'Destructive'],
    [{ name: 'grid_write_cells', description: 'Write values into the cells of a range in a sheet.', inputSchema: obj({ bookId: str, range: str, values: { type: 'array', items: str } }) }, 'Write'],
  ]);
  check({ name: 'mailbox' }, [
    [{ name: 'binNote', description: 'Moves a note to the trash; it can be recovered for a week.', inputSchema: obj({ noteId: str }) }, 'Destructive'],
    [{ name: 'restore_note_from_trash', description: 'Moves a note from the trash back to the inbox.', inputSchema: obj({ noteId: str }) }, 'Write'],
  ]);
  check({ name: 'schema-studio' }, [
    [{ name: 'ship_draft', description: 'Ship the drafted schema edits. This executes the DDL on the app database.', inputSchema: obj({ appId: str }) }, 'Destructive'],
    [{ name: 'show_draft_ddl', description: 'Show the DDL that shipping the drafted edits would run.', inputSchema: obj({ appId: str }) }, 'Read'],
  ]);
  says({ name: 'slides' }, { name: 'shuffle_cards', description: 'Reorder cards in a deck. WARNING: This is a destructive operation.', inputSchema: obj({ order: { type: 'array', items: str } }) }, 'Destructive', /destructive operation/);
});

describe('an update that can widen who sees or changes an existing thing removes a protection; creating one with a policy does not', () => {
  check({ name: 'whiteboards' }, [
    [{ name: 'edit-canvas', description: 'Edit a canvas\'s title and settings.', inputSchema: obj({ canvasId: str, title: str, sharingPolicy: enumOf('private', 'view', 'edit') }) }, 'Destructive'],
    [{ name: 'share-canvas', description: 'Share a canvas with a team.', inputSchema: obj({ canvasId: str, accessLevel: enumOf('view', 'edit') }) }, 'Destructive'],
    [{ name: 'create-canvas', description: 'Create a new canvas with a sharing policy.', inputSchema: obj({ title: str, sharingPolicy: enumOf('private', 'view', 'edit') }) }, 'Write'],
  ]);
  check({ name: 'cloud-drive' }, [
    [{ name: 'setShare', description: 'Sets who can open a file.', inputSchema: obj({ fileId: str, role: enumOf('reader', 'writer'), type: enumOf('user', 'anyone') }) }, 'Destructive'],
  ]);
  check({ name: 'bots' }, [
    [{ name: 'update_bot', description: 'Update one bot\'s settings.', inputSchema: obj({ id: str, name: str, require_approval: bool }) }, 'Destructive'],
    [{ name: 'grant_role_permissions', description: 'Append permissions to a role.', inputSchema: obj({ roleId: str, permissions: { type: 'array', items: str } }) }, 'Destructive'],
    [{ name: 'update_bot_name', description: 'Rename one bot.', inputSchema: obj({ id: str, name: str }) }, 'Write'],
  ]);
});

describe('an import, an export or a PUT that can replace what is there is Destructive; one that only adds is not', () => {
  check({ name: 'settings-hub' }, [
    [{ name: 'prefs_import', description: 'Import preferences from JSON.', inputSchema: obj({ prefs: { type: 'object' }, merge: { type: 'boolean', description: 'Merge with the current ones (true) or replace them (false)' } }) }, 'Destructive'],
    [{ name: 'notes_import', description: 'Import notes from an export file.', inputSchema: obj({ path: str, merge: { type: 'boolean', description: 'Upsert into existing notes (default true)' } }) }, 'Write'],
    [{ name: 'export_palette', description: 'Write the colour palette to files in the repository.', inputSchema: obj({ path: str, strategy: enumOf('merge', 'overwrite') }) }, 'Destructive'],
  ]);
  check({ name: 'repo-host' }, [
    [{ name: 'forge_put', description: 'Replace Forge resources (full update).', inputSchema: obj({ path: str, body: { type: 'object' } }) }, 'Destructive'],
  ]);
  // A raw PUT to the server's own API, named for the server, is an arbitrary API call: Execute, limited (as the corpus labels it).
  check({ name: 'forge-rest' }, [
    [{ name: 'forge_put', description: 'Replace Forge resources (full update).', inputSchema: obj({ path: str, body: { type: 'object' } }) }, 'Execute'],
  ]);
  check({ name: 'notes' }, [
    [{ name: 'replacePhrase', description: 'Replaces every occurrence of a phrase in a note. Pass an empty replacement to delete the phrase.', inputSchema: obj({ noteId: str, find: str, replacement: str }) }, 'Destructive'],
  ]);
});

describe('a pull-request tool that can approve, and a queue of the server\'s own tools that manage things, take the dangerous reading', () => {
  check({ name: 'code-host' }, [
    [{ name: 'handle_pull_requests', description: 'Handle pull requests: open, list, review or merge.', inputSchema: obj({ action: enumOf('open', 'list', 'review', 'merge'), number: { type: 'integer' } }) }, 'Destructive'],
    [{ name: 'manage_issues', description: 'Manage issues: open, list or comment.', inputSchema: obj({ action: enumOf('open', 'list', 'comment'), number: { type: 'integer' } }) }, 'Write'],
  ]);
  check({ name: 'tracker' }, [
    [{ name: 'run_queue', description: 'Run up to ten tool calls in order in one go.', inputSchema: obj({ calls: { type: 'array', items: obj({ tool: enumOf('manage_ticket', 'search_tickets'), args: { type: 'object' } }) } }) }, 'Destructive'],
  ]);
});

describe('a call that spends money when asked to is Financial', () => {
  check({ name: 'eval-lab' }, [
    [{ name: 'tune_prompts', description: 'Optimise prompts against a benchmark. Dry run by default; pass live=true to actually spend on model calls.', inputSchema: obj({ live: bool }) }, 'Financial'],
    // A low cost named in passing spends nothing: it stays what it was.
    [{ name: 'local_infer', description: 'Run local inference at sub-cent per-call cost.', inputSchema: obj({ text: str }) }, 'Execute'],
  ]);
});

describe('a filter written in OData is a query language', () => {
  check({ name: 'crm-data' }, [
    [{ name: 'find-rows', description: 'Find rows with an OData filter expression.', inputSchema: obj({ table: str, filter: str }) }, 'Execute'],
  ]);
});
