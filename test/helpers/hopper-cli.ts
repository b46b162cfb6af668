/**
 * The `hopper` command as a user runs it: dist/hopper.mjs (the compiled command, built by npm run build) spawned with Node, its
 * output collected.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { writeDropFolder } from './fixtures.js';

const BIN = fileURLToPath(new URL('../../dist/hopper.mjs', import.meta.url));

/** A drop folder `name` in `parent`: one small CSV and train.json `{}`. */
export function smallDrop(parent: string, name: string): Promise<string> {
  return writeDropFolder(parent, name, { 'reviews.csv': 'id,text\nr1,good\nr2,bad\n', [TRAIN_JSON]: '{}' });
}

/**
 * The timeout of a test that starts `hopper` processes and runs a drop through them: each start
 * loads its modules, seconds on a busy 2-core machine, where 30 s was seen to run out.
 */
export const SUBPROCESS_TEST_MS = 90_000;

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunningHopper {
  /** What it has written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once `stream` holds `text`; rejects after `timeoutMs` or if the process ends first. */
  waitFor(text: string, timeoutMs: number, stream?: 'stdout' | 'stderr'): Promise<void>;
  /** Resolves when the process has ended. */
  finished(): Promise<Finished>;
  /** Sends `signal` (default SIGINT) and resolves when the process has ended. */
  stop(signal?: NodeJS.Signals): Promise<Finished>;
}

/** A user and group to run as (the test process must be root to switch). */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** Starts `hopper ...args`, with `env` added to this process's environment. */
export function startHopper(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  runAs?: RunAs,
): RunningHopper {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
    ...runAs,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const finished = async (): Promise<Finished> => ({ code: await exited, stdout, stderr });
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(text, timeoutMs, stream = 'stdout') {
      const deadline = Date.now() + timeoutMs;
      while (!(stream === 'stdout' ? stdout : stderr).includes(text)) {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`hopper ended before printing "${text}":\n${stdout}${stderr}`);
        if (Date.now() > deadline)
          throw new Error(`hopper printed no "${text}" on ${stream} within ${String(timeoutMs)} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    finished,
    async stop(signal = 'SIGINT') {
      child.kill(signal);
      return finished();
    },
  };
}

/** Runs `hopper ...args` to its end. */
export async function hopper(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  runAs?: RunAs,
): Promise<Finished> {
  return startHopper(args, env, runAs).finished();
}

/**
 * Runs `hopper ...args` to its end within `timeoutMs`; past it the command is stopped (SIGINT,
 * so it cleans up) and this rejects, naming the command.
 */
export async function hopperWithin(
  args: readonly string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = {},
  runAs?: RunAs,
): Promise<Finished> {
  const running = startHopper(args, env, runAs);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      resolve('timeout');
    }, timeoutMs);
  });
  const first = await Promise.race([running.finished(), timedOut]);
  clearTimeout(timer);
  if (first !== 'timeout') return first;
  const stopped = await running.stop();
  throw new Error(
    `hopper ${args.join(' ')} did not end within ${String(timeoutMs)} ms (stopped):\n${stopped.stdout}${stopped.stderr}`,
  );
}

/**
 * Someone who cannot write where permissions forbid it: root writes anywhere, so as root this is
 * `nobody` (uid and gid 65534); otherwise the test's own user (undefined).
 */
export function permissionBoundUser(): RunAs | undefined {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
}
