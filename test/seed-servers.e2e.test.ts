import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BIN, FIXTURES, tempDir, testEnv } from './helpers/toolgate.js';

/**
 * The servers the seeds come from — a debugpy debugger server (will-garrett/debugpy-mcp) and a
 * Jupyter server (Try3D/JupyterMCP) — are Python packages this machine cannot install, so a fixture
 * replays their real tool definitions (test/fixtures/replay/). Behind `toolgate run` with no
 * policy (the recommended one applies), every tool that runs code is limited — a call past its
 * limit is denied by a limits rule — or held, and every destructive one is held and never reaches
 * the server. "Destructive" here is what the servers themselves mark destructiveHint: true.
 */
interface Case {
  file: string;
  /** Tools that run code: attach a debugger, step through code, evaluate, execute cells, start kernels. */
  runsCode: string[];
}

const CASES: Case[] = [
  { file: 'debugpy-mcp.json', runsCode: ['debugpy_attach', 'debugpy_connect', 'debugpy_session_start', 'debugpy_continue', 'debugpy_step_over', 'debugpy_step_in', 'debugpy_step_out', 'debugpy_evaluate'] },
  { file: 'jupyter-mcp.json', runsCode: ['cell_execute', 'notebook_execute_all', 'kernel_start', 'kernel_restart', 'remote_connect'] },
];

/** Arguments that satisfy a tool's required properties. */
function argsFor(tool: { inputSchema?: { properties?: Record<string, { type?: string }>; required?: string[] } }): Record<string, unknown> {
  const props = tool.inputSchema?.properties ?? {};
  return Object.fromEntries((tool.inputSchema?.required ?? []).map((k) => [k, props[k]?.type === 'integer' || props[k]?.type === 'number' ? 1 : 'x']));
}

for (const c of CASES) {
  describe(`toolgate run with no policy in front of ${c.file.replace('.json', '')} (replayed definitions)`, () => {
    it('limits or holds every tool that runs code and holds every destructive one', async () => {
      const file = join(FIXTURES, 'replay', c.file);
      const defs = JSON.parse(readFileSync(file, 'utf8')) as { tools: { name: string; annotations?: { destructiveHint?: boolean } }[] };
      const destructive = defs.tools.filter((t) => t.annotations?.destructiveHint === true).map((t) => t.name);
      const home = tempDir();
      const record = join(home, 'calls.jsonl');
      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      const transport = new StdioClientTransport({
        command: process.execPath, args: [BIN, 'run', '--', process.execPath, join(FIXTURES, 'replay-server.mjs'), file],
        env: testEnv(home, { RECORD_FILE: record, TOOLGATE_LOG_LEVEL: 'info' }), stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr!.on('data', (d) => { stderr += d; });
      const client = new Client({ name: 'seed-servers', version: '1' });
      await client.connect(transport);
      try {
        const listed = (await client.listTools()).tools;
        assert.deepEqual(listed.map((t) => t.name).sort(), defs.tools.map((t) => t.name).sort(), 'nothing is hidden by the recommendation');
        const byName = new Map(listed.map((t) => [t.name, t]));
        for (const name of destructive) {
          await assert.rejects(client.callTool({ name, arguments: argsFor(byName.get(name) as never) }, undefined, { timeout: 400 }), /timed out/i, `${name} is held`);
          assert.match(stderr, new RegExp(`"${name}" on .* is held for approval`), `${name}: ${stderr}`);
        }
        for (const name of c.runsCode.filter((n) => !destructive.includes(n))) {
          assert.ok(byName.has(name), name);
          // A fixed window of at most 10 (Execute) or 30 (Write) calls a minute: within 61 calls a limit must deny one, even across a minute boundary.
          let limitedBy: string | undefined;
          for (let i = 0; i < 61 && !limitedBy; i++) {
            const result = await client.callTool({ name, arguments: argsFor(byName.get(name) as never) }, undefined, { timeout: 400 }).catch(() => ({ held: true }));
            if ('held' in result) { limitedBy = 'held'; break; }
            const rule = (result._meta as Record<string, { rule?: string }> | undefined)?.['dev.toolgate/decision']?.rule;
            if (result.isError && rule && /\/limits\/\d+$/.test(rule)) limitedBy = rule;
          }
          assert.ok(limitedBy, `${name} runs code and is neither limited nor held`);
        }
      } finally {
        await client.close();
      }
      const reached = existsSync(record) ? readFileSync(record, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { tool: string }).tool) : [];
      for (const name of destructive) assert.ok(!reached.includes(name), `${name} reached the server`);
    });
  });
}
