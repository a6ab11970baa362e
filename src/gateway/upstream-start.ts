import type { Logger } from '../log.js';
import { httpUpstream } from '../proxy/upstream-modern-http.js';
import { withEra } from '../proxy/upstream-modern.js';
import { StdioUpstream } from '../proxy/upstream-stdio.js';
import type { Upstream } from '../proxy/upstream.js';
import { serveEnv } from '../upstream-env/index.js';
import type { ServerConfig } from '../config/gateway.js';

/** One upstream session of a configured server under serve: its child process (in its era), or its URL. Throws when it cannot even be tried. */
export function startUpstream(name: string, server: ServerConfig, id: string, log: Logger): Upstream {
  const startStdio = (s: Extract<ServerConfig, { command: string }>) => new StdioUpstream({ command: s.command, args: s.args, env: serveEnv(s), cwd: s.cwd, log, stderr: log.child({ server: name, session: id }) });
  return 'command' in server
    ? withEra(server.protocol, startStdio(server), log, { respawn: () => startStdio(server) })
    : httpUpstream(server.protocol, new URL(server.url), server.headers, log);
}
