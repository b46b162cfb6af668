/**
 * The `hopper` command line (bin/hopper.mjs): dispatches to one module per command.
 */
import { runLocalCommand } from './mode/local-command.js';
import { runRunCommand } from './mode/run-command.js';
import { runServiceCommand } from './service/cli.js';

const USAGE = `Usage: hopper <command> [options]

Commands:
  run <folder>      train a drop folder end to end on this machine (local mode)
  local             serve local mode for any S3 client until Ctrl-C
  service           run the simulated training service alone

hopper <command> --help lists a command's options.
`;

/** Runs `hopper <argv>`; resolves to the process exit code (servers keep running until signalled). */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === 'run') return runRunCommand(rest);
  if (command === 'local') return runLocalCommand(rest);
  if (command === 'service') return runServiceCommand(rest);
  process.stderr.write(`hopper: unknown command "${command}"\n\n${USAGE}`);
  return 2;
}
