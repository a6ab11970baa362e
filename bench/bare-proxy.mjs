#!/usr/bin/env node
// The floor for any Node stdio proxy: parse each JSON line, re-serialise it, forward it. No policy.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const child = spawn(process.argv[2], process.argv.slice(3), { stdio: ['pipe', 'pipe', 'inherit'] });
createInterface({ input: process.stdin }).on('line', (l) => child.stdin.write(JSON.stringify(JSON.parse(l)) + '\n'));
createInterface({ input: child.stdout }).on('line', (l) => process.stdout.write(JSON.stringify(JSON.parse(l)) + '\n'));
process.stdin.on('end', () => child.stdin.end());
child.on('exit', (code) => process.exit(code ?? 0));
