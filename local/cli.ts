/**
 * The `hopper` command line (bin/hopper.mjs): dispatches to one module per command.
 */
import { runModelsCommand } from './commands/models.js';
import { runRetryCommand } from './commands/retry.js';
import { runRunsCommand } from './commands/runs.js';
import { runStatusCommand } from './commands/status.js';
import { runLocalCommand } from './mode/local-command.js';
import { runRunCommand } from './mode/run-command.js';
import { runServiceCommand } from './service/cli.js';

const USAGE = `Usage: hopper <command> [options]

Commands:
  run <folder>      train a drop folder end to end on this machine (local mode)
  local             serve local mode for any S3 client until Ctrl-C
  service           run the simulated training service alone
  status [drop]     the latest status of one drop, or a table of every drop
  runs <drop>       the drop's runs, newest first, with their outcome
  models            the training service's models, newest first, paged
  retry <drop>      resume a failed run from its dataset, without uploading again

status, runs, models and retry talk to a deployed stack (--stack NAME) or to a running
\`hopper local\` (the settings it prints); --json on each for scripts.

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
  if (command === 'status') return runStatusCommand(rest);
  if (command === 'runs') return runRunsCommand(rest);
  if (command === 'models') return runModelsCommand(rest);
  if (command === 'retry') return runRetryCommand(rest);
  process.stderr.write(`hopper: unknown command "${command}"\n\n${USAGE}`);
  return 2;
}
