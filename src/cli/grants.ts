import type { Command } from 'commander';
import type { AuditLog } from '../audit/index.js';
import { oneLine } from '../display/index.js';
import { Grants, serversOf } from '../grants/grants.js';
import { CliError, parseSince, printJson, stateFailureLine, stateOptions, stores, type StateFlags, say } from './common.js';

interface GrantFlags extends StateFlags { json?: boolean }

async function withGrants<T>(flags: GrantFlags, fn: (g: Grants, audit: AuditLog) => Promise<T>): Promise<T> {
  const { state, audit } = await stores(flags);
  try {
    return await fn(new Grants(state.grants), audit);
  } catch (err) {
    if (err instanceof CliError) throw err;
    const lost = stateFailureLine(err);
    throw lost ? new CliError(lost) : new CliError((err as Error).message, 1);
  } finally {
    audit.close();
    await state.close();
  }
}

/** `--expires`: a duration above 0 (0s would be a grant that is never valid). */
function expiry(text: string): number {
  const ms = parseSince(text);
  if (ms <= 0) throw new CliError(`--expires must be more than 0, got "${text}": e.g. 30d or 12h`);
  return ms;
}

const common = (cmd: Command) => stateOptions(cmd).option('--json', 'print JSON only');

export function registerGrants(program: Command): void {
  const grants = program.command('grants').description('credentials for the gateway: create, list, rotate, revoke');

  common(grants.command('create').description('a new grant; its token is printed once')
    .requiredOption('--server <name>', 'a server it opens; repeat for a grant on several servers (one agent across them)', (v: string, all: string[] = []) => [...all, v])
    .requiredOption('--label <label>', 'who or what uses it, e.g. ci-runner')
    .option('--policy <file>', 'a policy that replaces the server\'s for this grant')
    .option('--tags <list>', 'comma-separated tags (for conditions on grant.tags)', '')
    .option('--expires <duration>', 'e.g. 30d, 12h'))
    .action((flags: GrantFlags & { server: string[]; label: string; policy?: string; tags: string; expires?: string }) => withGrants(flags, async (g, audit) => {
      const { grant, token } = await g.create({
        server: flags.server[0], servers: flags.server.slice(1), label: flags.label, policy: flags.policy,
        tags: flags.tags ? flags.tags.split(',').map((t) => t.trim()).filter(Boolean) : [],
        expiresInMs: flags.expires === undefined ? undefined : expiry(flags.expires),
      });
      audit.append({ kind: 'grant', server: grant.server, grant: grant.label, message: `created ${grant.id}` });
      if (flags.json) printJson({ ...grant, token });
      else say(oneLine`${grant.id} ${grant.label} for ${serversOf(grant).join(', ')}${grant.expiresAt ? `, expires ${grant.expiresAt}` : ''}` + `\ntoken (shown once): ${token}\n`);
    }));

  common(grants.command('list').description('every grant, without tokens'))
    .action((flags: GrantFlags) => withGrants(flags, async (g) => {
      const all = await g.list();
      if (flags.json) printJson(all);
      else if (all.length === 0) say('no grants: toolgate grants create --server S --label L\n');
      else for (const x of all) say(oneLine`${x.id}  ${x.label.padEnd(16)} ${serversOf(x).join(',').padEnd(16)} ${x.revokedAt ? `revoked ${x.revokedAt}` : x.expiresAt ? `expires ${x.expiresAt}` : 'active'}${x.tags.length ? `  [${x.tags.join(', ')}]` : ''}` + '\n');
    }));

  common(grants.command('rotate').description('a new token for a grant; the old one stops working at once').argument('<id-or-label>').option('--server <name>'))
    .action((idOrLabel: string, flags: GrantFlags & { server?: string }) => withGrants(flags, async (g, audit) => {
      const { grant, token } = await g.rotate(idOrLabel, flags.server);
      audit.append({ kind: 'grant', server: grant.server, grant: grant.label, message: `rotated ${grant.id}` });
      if (flags.json) printJson({ ...grant, token });
      else say(`${grant.id} rotated\ntoken (shown once): ${token}\n`);
    }));

  common(grants.command('revoke').description('revoke a grant; it is refused from the next request').argument('<id-or-label>').option('--server <name>'))
    .action((idOrLabel: string, flags: GrantFlags & { server?: string }) => withGrants(flags, async (g, audit) => {
      const grant = await g.revoke(idOrLabel, flags.server);
      audit.append({ kind: 'grant', server: grant.server, grant: grant.label, message: `revoked ${grant.id}` });
      if (flags.json) printJson(grant);
      else say(`${grant.id} revoked\n`);
    }));
}
