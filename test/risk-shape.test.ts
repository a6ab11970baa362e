import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyTools } from '../src/risk/index.js';
import { bool, check, enumOf, obj, says, str } from './helpers/risk-cases.js';

/**
 * Round seven of issue 24 (src/risk/classify/strict-shape.ts): classes read from the *shape* of a call
 * (its parameters and what the description says the call means), not from a domain's words: billed
 * calls, access widened, gates passed on the agent's word, findings suppressed, content replaced, a
 * removal from the application itself, a query run to get its plan. Every tool here is invented (no
 * name or description is taken from a blind set); each class has a lax neighbour that stays as it was.
 */
describe('a call the text says is billed is Financial, whatever it produces; a free one is not', () => {
  check({ name: 'studio-gen' }, [
    [{ name: 'render_song', description: 'Compose a song from a mood. Each call may incur costs on your studio account.', inputSchema: obj({ mood: str }) }, 'Financial'],
    [{ name: 'sketch_logo', description: 'Draw a logo from a brief. Billed per image from your workspace credits.', inputSchema: obj({ brief: str }) }, 'Financial'],
    [{ name: 'upscale_photo', description: 'Upscale a photo. Consumes 2 credits per megapixel.', inputSchema: obj({ path: str }) }, 'Financial'],
    [{ name: 'preview_song', description: 'Preview a song locally; this does not incur costs.', inputSchema: obj({ mood: str }) }, 'Read'],
    [{ name: 'list_voices', description: 'List the voices you can use.' }, 'Read'],
  ]);
  says({ name: 'studio-gen' }, { name: 'dream_clip', description: 'Make a short clip from a prompt. Note: this will incur charges.', inputSchema: obj({ prompt: str }) }, 'Financial', /each call spends money/);
});

describe('widening who may access something removes a protection; revoking, creating a role or setting a token does not', () => {
  check({ name: 'vault-share' }, [
    [{ name: 'grant_scopes', description: 'Give an agent scopes on a vault.', inputSchema: obj({ agent_id: str, scopes: { type: 'array', items: str } }) }, 'Destructive'],
    [{ name: 'share_folder', description: 'Share a folder with a colleague.', inputSchema: obj({ folder_id: str, email: str }) }, 'Destructive'],
    [{ name: 'assign_vault_role', description: 'Assign a role to a person.', inputSchema: obj({ role: str, user: str }) }, 'Destructive'],
    [{ name: 'update_folder_permissions', description: 'Update the permissions of a folder.', inputSchema: obj({ folder_id: str, users: { type: 'array', items: str }, linkLevel: enumOf('none', 'view', 'edit') }) }, 'Destructive'],
    [{ name: 'unshare_folder', description: 'Stop sharing a folder with a colleague.', inputSchema: obj({ folder_id: str, email: str }) }, 'Write'],
    [{ name: 'create_vault_role', description: 'Create a new, empty role.', inputSchema: obj({ name: str }) }, 'Write'],
    [{ name: 'publish_board', description: 'Publish a private board to the whole company.', inputSchema: obj({ board_id: str }) }, 'Destructive'],
    [{ name: 'publish_draft_post', description: 'Publish a draft post to the blog.', inputSchema: obj({ post_id: str }) }, 'Write'],
    [{ name: 'set_access_token', description: 'Set the access token used for the vault API.', inputSchema: obj({ accessToken: str }) }, 'Write'],
  ]);
  says({ name: 'vault-share' }, { name: 'grant_reader', description: 'Grant read access on a vault.', inputSchema: obj({ vault: str, user: str }) }, 'Destructive', /widening who may see or change something removes a protection/);
});

describe('approving what a person was meant to review passes a gate; a plain status does not', () => {
  check({ name: 'kyc-desk' }, [
    [{ name: 'decide_check', description: 'Approve or reject an identity verification.', inputSchema: obj({ check_id: str, decision: enumOf('approve', 'reject') }) }, 'Destructive'],
    [{ name: 'answer_pending_question', description: 'Answer a pending elicitation on behalf of the user, so the waiting review can continue.', inputSchema: obj({ request_id: str, response: enumOf('accept', 'decline') }) }, 'Destructive'],
    [{ name: 'set_ticket_status', description: 'Set the status of a ticket.', inputSchema: obj({ ticket_id: str, status: enumOf('open', 'done', 'approved') }) }, 'Write'],
  ]);
});

describe('marking a finding a false positive or won\'t-fix takes it out of the gate; a review comment\'s status does not', () => {
  check({ name: 'code-scan' }, [
    [{ name: 'markFindingFalsePositive', description: 'Mark a scanner finding as a false positive.', inputSchema: obj({ finding: str }) }, 'Destructive'],
    [{ name: 'update_finding_status', description: 'Update the status of a finding.', inputSchema: obj({ id: str, status: enumOf('OPEN', 'FALSE_POSITIVE', 'WONT_FIX') }) }, 'Destructive'],
    [{ name: 'resolve_hotspot', description: 'Resolve a security hotspot.', inputSchema: obj({ id: str, resolution: { anyOf: [enumOf('FIXED', 'SAFE'), { type: 'null' }] } }) }, 'Destructive'],
    [{ name: 'resolve_vulnerability', description: 'Resolve a vulnerability.', inputSchema: obj({ id: str, resolution: enumOf('FIXED', 'SAFE', 'ACKNOWLEDGED') }) }, 'Destructive'],
    [{ name: 'close_comment_thread', description: 'Close a review comment thread.', inputSchema: obj({ id: str, status: enumOf('fixed', 'wontFix', 'closed') }) }, 'Write'],
    [{ name: 'assign_finding', description: 'Assign a scanner finding to a developer.', inputSchema: obj({ finding: str, assignee: str }) }, 'Write'],
  ]);
});

describe('a call that can replace what exists loses what was there; a plain create or a single replacement does not', () => {
  check({ name: 'notes' }, [
    [{ name: 'create_template', description: 'Create a note template.', inputSchema: obj({ name: str, body: str, orReplace: bool }) }, 'Destructive'],
    [{ name: 'edit_page_text', description: 'Edit text in a wiki page.', inputSchema: obj({ page: str, old_text: str, new_text: str, replace_all: bool }) }, 'Destructive'],
    [{ name: 'load_backup', description: 'Load notes into the store. Restores notes from a nightly backup.', inputSchema: obj({ path: str }) }, 'Destructive'],
    [{ name: 'create_note_template', description: 'Create a note template.', inputSchema: obj({ name: str, body: str }) }, 'Write'],
    [{ name: 'edit_page_passage', description: 'Edit text in a wiki page.', inputSchema: obj({ page: str, old_text: str, new_text: str }) }, 'Write'],
    [{ name: 'import_notes', description: 'Import notes into the store from a file.', inputSchema: obj({ path: str }) }, 'Write'],
  ]);
});

describe('a merge where one side does not survive, and an update that unsets fields by filter, destroy; a plain merge or update does not', () => {
  check({ name: 'crm-lite' }, [
    [{ name: 'merge_contacts', description: 'Merge two contacts. The older contact is deleted after its notes move over.', inputSchema: obj({ keep_id: str, drop_id: str }) }, 'Destructive'],
    [{ name: 'update_contacts', description: 'Update contacts matching a filter.', inputSchema: obj({ filter: str, set: obj({}), unset: { type: 'array', items: str } }) }, 'Destructive'],
    [{ name: 'merge_tags', description: 'Merge tags onto a contact.', inputSchema: obj({ contact_id: str, tags: { type: 'array', items: str } }) }, 'Write'],
    [{ name: 'update_contact', description: 'Update one contact.', inputSchema: obj({ id: str, set: obj({}) }) }, 'Write'],
  ]);
});

describe('a call that runs a command-line program is Execute; one that reads its output is not', () => {
  check({ name: 'lintbox' }, [
    [{ name: 'lint_repo', description: 'Run style checks locally using the Lintbox CLI.', inputSchema: obj({ path: str }) }, 'Execute'],
    [{ name: 'lint_report', description: 'Get the last report of the style checks.', inputSchema: obj({ path: str }) }, 'Read'],
  ]);
});

describe('a removal from the application itself deletes; a removal from a list does not', () => {
  check({ name: 'TaskPad Server' }, [
    [{ name: 'remove_entry', description: 'Remove a chore or a goal from Taskpad.', inputSchema: obj({ id: str }) }, 'Destructive'],
    [{ name: 'drop_entry', description: 'Remove a chore from TaskPad.', inputSchema: obj({ id: str }) }, 'Destructive'],
    [{ name: 'remove_entry_from_list', description: 'Remove a chore from a list.', inputSchema: obj({ id: str, list: str }) }, 'Write'],
  ]);
});

describe('a query run to get its plan with actual timings is executed; a plain plan is not', () => {
  check({ name: 'dbtools' }, [
    [{ name: 'db_explain', description: 'Show the plan of a query.', inputSchema: obj({ query: str, analyze: bool }) }, 'Execute'],
    [{ name: 'db_plan_timed', description: 'Show a query plan using EXPLAIN ANALYZE.', inputSchema: obj({ sql: str }) }, 'Execute'],
    [{ name: 'db_plan', description: 'Show the plan of a saved view.', inputSchema: obj({ view: str }) }, 'Read'],
  ]);
});

it('keeps every reading stricter-only: a Destructive tool stays Destructive', () => {
  const [got] = classifyTools([{ name: 'delete_vault', description: 'Delete a vault. May incur costs.', inputSchema: obj({ id: str }) }], { name: 'vault' });
  assert.ok(got.category === 'Destructive' || got.category === 'Financial', got.rationale);
});
