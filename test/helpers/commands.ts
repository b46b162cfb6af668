/**
 * Running the `hopper status|runs|models|retry` commands in-process against local mode, as a
 * shell would after eval'ing `hopper local`'s export lines, with their output captured.
 */
import { Writable } from 'node:stream';
import type { CommandDeps } from '../../local/cli/target.js';
import { exportLines } from '../../local/cli/local.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import type { CommandIo } from '../../local/cli/command.js';

export type Command = (argv: readonly string[], io?: CommandIo, deps?: CommandDeps) => Promise<number>;

/** Runs a command with its output captured; `deps` is its environment, or all it is given. */
export async function runCommandCaptured(
  command: Command,
  argv: readonly string[],
  deps: NodeJS.ProcessEnv | CommandDeps,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (text: string) => void): Writable =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        append(chunk.toString());
        done();
      },
    });
  const io = { stdout: sink((text) => (stdout += text)), stderr: sink((text) => (stderr += text)) };
  const code = await command(argv, io, isCommandDeps(deps) ? deps : { env: deps });
  return { code, stdout, stderr };
}

function isCommandDeps(deps: NodeJS.ProcessEnv | CommandDeps): deps is CommandDeps {
  return typeof deps.env === 'object';
}

/** What a shell has after eval'ing `hopper local`'s export lines. */
export function settingsOf(local: LocalMode): NodeJS.ProcessEnv {
  const settings: NodeJS.ProcessEnv = {};
  for (const line of exportLines(local)) {
    const match = /^export ([A-Z_]+)=(\S+)$/.exec(line);
    if (match?.[1] === undefined) throw new Error(`not an export line: ${line}`);
    settings[match[1]] = match[2];
  }
  return settings;
}
