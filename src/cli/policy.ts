import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CompiledPolicy, Engine } from '../engine/index.js';
import { sessionScopeNotes } from '../era/session-scope.js';
import { formatIssue, loadPolicyFile, policyJsonSchema, validatePolicyObject } from '../policy/index.js';
import { importInterceptPolicy } from '../policy/import-intercept.js';
import { explainResults } from '../results/explain.js';
import { openMemoryState } from '../state/memory.js';
import { classifyTools, fetchListing, recommendPolicy, SourceError, type ToolDefinition } from '../risk/index.js';
import { jsonText } from '../display/index.js';
import { CliError, printJson, say, stateOptions } from './common.js';
import { readTools } from './risk.js';
import { resolveSource, sourceOptions, type SourceFlags } from './source.js';
import { looksLikeGatewayConfig, validateGatewayConfigFile } from './validate-config.js';

interface JsonFlag { json?: boolean }

export function registerPolicy(program: Command): void {
  const policy = program.command('policy').description('validate, explain, import and describe policies');

  policy
    .command('validate')
    .description('check policy files (or a toolgate.yaml, as serve -c loads it); every error with its JSON pointer (and line:column)')
    .argument('<files...>')
    .option('--json', 'print JSON only')
    .action((files: string[], flags: JsonFlag) => {
      // A file that is not there is the environment's problem, not the policy's: exit 2.
      const missing = files.find((file) => !existsSync(file));
      if (missing) throw new CliError(`no such file: ${missing}`);
      const configs = files.filter(looksLikeGatewayConfig).map(validateGatewayConfigFile);
      const report = files.filter((file) => !configs.some((c) => c.file === file)).map((file) => ({ file, ...loadPolicyFile(file) }));
      const failed = report.some((r) => !r.ok) || configs.some((c) => !c.valid);
      if (flags.json) {
        printJson([...configs, ...report.map((r) => {
          if (!r.ok) return { file: r.file, valid: false, errors: r.issues };
          const notes = sessionScopeNotes(r.policy);
          return { file: r.file, valid: true, hash: r.hash, ...(notes.length > 0 ? { notes } : {}) };
        })]);
      } else {
        for (const c of configs) {
          if (c.valid) say(`${c.file}: a gateway configuration (toolgate serve -c), valid: ${c.servers.length} server(s) (${c.servers.join(', ')}), every policy file it names valid too\n`);
          else {
            say(`${c.file}: a gateway configuration (toolgate serve -c), checked as serve loads it:\n`);
            for (const issue of c.errors) say(formatIssue(issue.file, issue) + '\n');
          }
        }
        for (const r of report) {
          if (r.ok) {
            say(`${r.file}: valid (${Object.keys(r.policy.tools).length} tool entries, default ${r.policy.default}, ${r.policy.mode})\n`);
            for (const note of sessionScopeNotes(r.policy)) say(`  note: ${note}\n`);
          } else for (const issue of r.issues) say(formatIssue(r.file, issue) + '\n');
        }
      }
      if (failed) process.exitCode = 1;
    });

  policy
    .command('schema')
    .description('print the policy JSON Schema (draft 2020-12)')
    .option('--json', 'print JSON only (the default)')
    .action(() => { printJson(policyJsonSchema()); });

  policy
    .command('import')
    .description('convert an Intercept YAML policy into a toolgate policy')
    .argument('<file>')
    .option('-o, --output <file>', 'write the policy here instead of stdout')
    .option('--json', 'print {"policy", "notes"} as JSON')
    .action((file: string, flags: JsonFlag & { output?: string }) => {
      let text: string;
      try { text = readFileSync(file, 'utf8'); } catch (err) { throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code}`); }
      let result;
      try { result = importInterceptPolicy(text); } catch (err) { throw new CliError(`${file}: ${(err as Error).message}`, 1); }
      const check = validatePolicyObject(result.policy);
      if (!check.ok) for (const issue of check.issues) result.notes.push(`the converted policy is invalid at ${issue.pointer}: ${issue.message}`);
      const out = JSON.stringify(result.policy, null, 2) + '\n';
      if (flags.output) writeFileSync(flags.output, out);
      if (flags.json) printJson({ policy: result.policy, notes: result.notes });
      else {
        if (!flags.output) process.stdout.write(jsonText(out));
        for (const note of result.notes) process.stderr.write(`note: ${note}\n`);
      }
      if (!check.ok) process.exitCode = 1;
    });

  sourceOptions(stateOptions(policy
    .command('recommend')
    .description('the recommended policy for a server, as JSON: default deny, Read allowed, Write 30/min, Execute 10/min, Destructive and Financial need approval')
    .option('--tools <file>', 'classify these tools instead of connecting (a tools/list result, an array or JSON Lines)')
    .option('--json', 'print JSON only (the default)')))
    .action(async (command: string[], flags: SourceFlags & { tools?: string }) => {
      let tools: ToolDefinition[];
      let server: { name?: string; instructions?: string };
      if (flags.tools) ({ tools, server } = readTools(flags.tools));
      else {
        try {
          const list = await fetchListing(resolveSource(command, flags, 'a server or --tools FILE'));
          tools = list.tools;
          server = { name: list.serverInfo.name, instructions: list.instructions ?? undefined };
        } catch (err) {
          if (err instanceof SourceError) throw new CliError(err.message);
          throw err;
        }
      }
      printJson(recommendPolicy(classifyTools(tools, server), tools, server.name));
    });

  policy
    .command('explain')
    .description('show the decision a policy makes for one call, and the rule that makes it')
    .argument('<file>')
    .requiredOption('--tool <name>', 'tool name')
    .option('--args <json>', 'arguments as a JSON object', '{}')
    .option('--grant <label>', 'grant label', 'local')
    .option('--tags <list>', 'grant tags, comma-separated', '')
    .option('--client <name>', 'client name (clientInfo.name)')
    .option('--server <name>', 'server name', 'server')
    .option('--result <json|text>', 'a sample result (a tools/call result as JSON, or text): what the result policy would do to it')
    .option('--roles <list>', 'the tool\'s flow roles (private, untrusted, egress), comma-separated; default: its flow: in the policy, else none')
    .option('--touched <list>', 'flow roles the agent has touched just before this call, comma-separated (for the policy\'s flows rules)', '')
    .option('--json', 'print JSON only')
    .action(async (file: string, flags: JsonFlag & { tool: string; args: string; grant: string; tags: string; client?: string; server: string; result?: string; roles?: string; touched: string }) => {
      const loaded = loadPolicyFile(file);
      if (!loaded.ok) throw new CliError(`invalid policy ${formatIssue(file, loaded.issues[0])}`, 1);
      let args: unknown;
      try { args = JSON.parse(flags.args); } catch { throw new CliError('--args is not valid JSON'); }
      if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new CliError('--args must be a JSON object');
      const state = openMemoryState();
      const compiled = new CompiledPolicy(loaded.policy, loaded.hash);
      const engine = new Engine({ policy: compiled, counters: state.counters });
      const listOf = (text: string) => text.split(',').map((t) => t.trim()).filter(Boolean);
      const now = Date.now();
      const roles = flags.roles !== undefined ? listOf(flags.roles) : engine.current.lookup(flags.tool).entry?.flow ?? [];
      const touched = listOf(flags.touched).map((role) => ({ role, tool: '(given with --touched)', server: flags.server, at: now }));
      const ctx = {
        tool: flags.tool,
        args: args as Record<string, unknown>,
        grant: { label: flags.grant, tags: flags.tags ? flags.tags.split(',').map((t) => t.trim()) : [] },
        session: { id: 'explain', client: flags.client },
        server: { name: flags.server },
        now,
      };
      const d = await engine.decide(ctx, roles.length ? { flow: { roles, touched } } : {});
      const results = explainResults(compiled, ctx, flags.result);
      const result = {
        tool: flags.tool, verdict: d.verdict, rule: d.rule, message: d.message ?? null,
        mode: engine.shadow ? 'shadow' : 'enforce',
        flow: roles,
        limits: d.charges.map((c) => ({ counter: c.key.split('\x1f')[0], increment: c.amount, max: c.max, ...(c.window ? { windowSeconds: c.window.ms / 1000 } : {}) })),
        ...(d.approval ? { approval: d.approval } : {}),
        results: results.json,
        // What the policy does should the tool's listed definition carry text aimed at the model (src/poison).
        poisoned: engine.current.poisonedFor(flags.tool),
      };
      if (flags.json) printJson(result);
      else {
        say(`${d.verdict.toUpperCase()} by ${d.rule}${d.message ? `: ${d.message}` : ''}\n`);
        for (const l of result.limits) say(`  counts ${l.increment} against "${l.counter}" (max ${l.max} ${perWindow(l.windowSeconds)})\n`);
        if (!d.enforced) say('  (shadow mode: the call would be forwarded anyway)\n');
        for (const line of results.lines) say(`${line}\n`);
        say(`  if its definition is poisoned: ${result.poisoned === 'hide' ? 'hidden and denied (poisoned: hide)' : result.poisoned === 'warn' ? 'kept, logged and audited (poisoned: warn)' : 'kept silently (poisoned: allow)'}\n`);
      }
    });
}

/** "per minute" rather than "per window": the reader of explain wants the limit as the policy states it. */
export function perWindow(seconds: number | undefined): string {
  const named: Record<number, string> = { 1: 'second', 60: 'minute', 3600: 'hour', 86_400: 'day' };
  if (seconds === undefined) return 'per window';
  return named[seconds] ? `per ${named[seconds]}` : `per ${seconds} s window`;
}
