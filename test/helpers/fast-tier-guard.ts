/**
 * The fast tier's rule (test/tiers.ts), enforced: a test file there starts no server and no child
 * process. Set up before each of its files (vitest.config.ts), this makes listening on a socket
 * and spawning a process throw, naming the tier such a test belongs in, so a file that comes to
 * need local mode, a loopback server or a build fails where it stands instead of slowing the
 * inner loop.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { Server } from 'node:net';

/** What a fast-tier test that tries `what` is told. */
export function fastTierRefusal(what: string): string {
  return `${what} in the fast tier: a test that needs one belongs in the integration tier (test/tiers.ts)`;
}

function refuse(what: string): () => never {
  return () => {
    throw new Error(fastTierRefusal(what));
  };
}

Server.prototype.listen = refuse('a server listening');
const SPAWNING = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;
const writable = childProcess as unknown as Record<(typeof SPAWNING)[number], () => never>;
for (const name of SPAWNING) writable[name] = refuse(`a child process (${name})`);
// `import { spawn } from 'node:child_process'` reads the same functions.
syncBuiltinESMExports();
