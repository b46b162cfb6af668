/**
 * The `hopper` command line (bin/hopper.mjs): dispatches to one module per command.
 * Local mode (`hopper run`, `hopper local`) is not built yet; until it is, saying so plainly
 * beats an unknown-command error.
 */
import { runServiceCommand } from './service/cli.js';

const USAGE = `Usage: hopper <command> [options]

Commands:
  service [flags]   run the simulated training service alone (hopper service --help lists every flag)

Coming with local mode (not built yet):
  run <folder>      train a drop folder end to end on this machine
  local             serve local mode for any S3 client
`;

const NOT_BUILT = new Set(['run', 'local']);

/** Runs `hopper <argv>`; resolves to the process exit code (a server keeps running until signalled). */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === 'service') return runServiceCommand(rest);
  if (NOT_BUILT.has(command)) {
    process.stderr.write(
      `hopper ${command}: local mode is not built yet. What works today: hopper service, npm test (see README.md).\n`,
    );
    return 2;
  }
  process.stderr.write(`hopper: unknown command "${command}"\n\n${USAGE}`);
  return 2;
}
