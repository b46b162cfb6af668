/**
 * The `hopper` command line (bin/hopper.mjs): dispatches to one module per command.
 */

// Each command is loaded when asked for: --help, a refused command line or `hopper status`
// answers without loading local mode, the CDK app and the local S3 server.
const COMMANDS: Readonly<Record<string, (argv: readonly string[]) => Promise<number>>> = {
  run: async (argv) => (await import('./run.js')).runRunCommand(argv),
  local: async (argv) => (await import('./local.js')).runLocalCommand(argv),
  service: async (argv) => (await import('./service.js')).runServiceCommand(argv),
  status: async (argv) => (await import('./status.js')).runStatusCommand(argv),
  runs: async (argv) => (await import('./runs.js')).runRunsCommand(argv),
  models: async (argv) => (await import('./models.js')).runModelsCommand(argv),
  retry: async (argv) => (await import('./retry.js')).runRetryCommand(argv),
};

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
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (run !== undefined) return run(rest);
  process.stderr.write(`hopper: unknown command "${command}"\n\n${USAGE}`);
  return 2;
}
