import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyTool, type ToolDefinition } from '../src/risk/index.js';

/** Invented definitions: each flow role found with evidence, and look-alikes that play none. */
const roles = (t: ToolDefinition) => classifyTool(t).flows!.roles.join('+') || '-';
const obj = (props: Record<string, unknown>) => ({ type: 'object', properties: props });

describe('flow roles (SPEC 11), found by the classifier', () => {
  const cases: [string, ToolDefinition, string][] = [
    ['reads a local file', { name: 'read_note_file', description: 'Read the contents of a file in the notes folder.', inputSchema: obj({ path: { type: 'string' } }) }, 'private'],
    ['reads environment', { name: 'get_environment', description: 'Returns the environment variables of the process.' }, 'private'],
    ['queries a database', { name: 'run_select', description: 'Execute a read-only SQL query against the orders database.', inputSchema: obj({ sql: { type: 'string' } }) }, 'private+egress'],
    ['fetches a web page', { name: 'fetch_page', description: 'Fetches a web page at a URL and returns it as markdown.', inputSchema: obj({ url: { type: 'string' } }) }, 'untrusted+egress'],
    ['searches the web', { name: 'web_search', description: 'Search the web and return the top results.', inputSchema: obj({ q: { type: 'string' } }) }, 'untrusted'],
    ['reads issue comments', { name: 'list_issue_comments', description: 'List the comments on an issue.', inputSchema: obj({ issue: { type: 'number' } }) }, 'untrusted'],
    ['reads inbound mail', { name: 'get_email', description: 'Get the full content of one email in the inbox.', inputSchema: obj({ uid: { type: 'string' } }) }, 'private+untrusted'],
    ['sends a message', { name: 'send_message', description: 'Send a message to a channel.', inputSchema: obj({ channel: { type: 'string' }, text: { type: 'string' } }) }, 'egress'],
    ['posts publicly', { name: 'create_comment', description: 'Add a comment to a discussion.', inputSchema: obj({ body: { type: 'string' } }) }, 'egress'],
    ['makes HTTP requests', { name: 'http_post', description: 'Make an HTTP POST request to a URL.', inputSchema: obj({ url: { type: 'string' }, body: { type: 'string' } }) }, 'untrusted+egress'],
    ['runs shell commands', { name: 'shell', description: 'Execute a shell command and return its output.', inputSchema: obj({ command: { type: 'string' } }) }, 'private+egress'],
    // Look-alikes that play no role.
    ['a local calculator', { name: 'add_numbers', description: 'Add two numbers.', inputSchema: obj({ a: { type: 'number' }, b: { type: 'number' } }) }, '-'],
    ['reading posts takes others\' words in, it sends nothing', { name: 'get_posts', description: 'Get the latest posts of a forum.' }, 'untrusted'],
    ['stopping a port forward sends nothing', { name: 'stop_port_forward', description: 'Stop a port-forward process.' }, '-'],
    ['a reaction is not a message', { name: 'add_reaction', description: 'Add a reaction emoji to a message.', inputSchema: obj({ emoji: { type: 'string' } }) }, '-'],
    ['a link between issues posts nothing', { name: 'create_issue_link', description: 'Link two issues.', inputSchema: obj({ a: { type: 'number' }, b: { type: 'number' } }) }, '-'],
    ['writing a file is not egress', { name: 'write_file', description: 'Write text to a file.', inputSchema: obj({ path: { type: 'string' }, content: { type: 'string' } }) }, '-'],
    ['typing text is not sending it', { name: 'type_text', description: 'Type text into the focused input.', inputSchema: obj({ text: { type: 'string' } }) }, '-'],
  ];
  for (const [what, tool, want] of cases) it(`${what}: ${want}`, () => assert.equal(roles(tool), want, JSON.stringify(classifyTool(tool).flows)));

  it('names the words that made each role', () => {
    const f = classifyTool({ name: 'fetch_page', description: 'Fetches a web page at a URL.', inputSchema: obj({ url: { type: 'string' } }) }).flows!;
    assert.deepEqual(f.evidence.map((e) => [e.role, e.from]), [['untrusted', 'name'], ['egress', 'schema']]);
    assert.match(f.evidence[0].text, /fetch/);
  });
});

describe('records show flow roles (issue 27 item 4)', async () => {
  const { buildRecord, serverHtml, serverMarkdown, toolMarkdown } = await import('../src/risk/index.js');
  const listing = (tools: ToolDefinition[]) => buildRecord({
    serverInfo: { name: 'mailer' }, protocolVersion: '2025-06-18', instructions: null, capabilities: { tools: {} }, tools,
    resources: [], resourceTemplates: [], prompts: [], origin: { kind: 'command', commandLine: 'mailer' }, auth: { kind: 'local-process', secretEnv: [] } as never,
  }, null);
  const readMail: ToolDefinition = { name: 'get_email', description: 'Get the full content of one email in the inbox.', inputSchema: obj({ uid: { type: 'string' } }) };
  const sendMail: ToolDefinition = { name: 'send_email', description: 'Send an email to a recipient.', inputSchema: obj({ to: { type: 'string' }, body: { type: 'string' } }) };

  it('a server that reads mail and sends mail completes the trifecta on its own, and says so', () => {
    const r = listing([readMail, sendMail]);
    assert.deepEqual(r.flows, { roles: { private: ['get_email'], untrusted: ['get_email'], egress: ['send_email'] }, trifecta: true });
    assert.match(serverMarkdown(r), /## Data flows\n\nThis server completes the lethal trifecta on its own/);
    assert.match(serverHtml(r), /completes the lethal trifecta on its own/);
    assert.match(toolMarkdown(r, r.tools[1]), /Flow roles:\n- \*\*egress\*\* — from the name: “send”/);
  });

  it('a server that only reads does not', () => {
    const r = listing([readMail]);
    assert.equal(r.flows!.trifecta, false);
    assert.match(serverMarkdown(r), /does not complete the lethal trifecta on its own\. Private: get_email\. Untrusted: get_email\. Egress: none\./);
  });

  it('a server page standing alone (stdout, -o x.md) links no tool pages that were never written', () => {
    const r = listing([readMail, sendMail]);
    assert.match(serverMarkdown(r), /\| \[get_email\]\(tools\/get_email\.md\) \|/);
    assert.match(serverHtml(r), /<a href="tools\/get_email\.html">/);
    assert.match(serverMarkdown(r, null), /\n\| get_email \| Read \|/);
    assert.doesNotMatch(serverMarkdown(r, null), /\]\(tools\//);
    assert.doesNotMatch(serverHtml(r, null), /href="tools\//);
    assert.match(serverHtml(r, null), /<tr><td>get_<wbr>email<\/td>/);
  });
});
