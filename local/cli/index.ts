/**
 * The `hopper` command line (dist/hopper.mjs, built by scripts/build.ts). This folder owns every command (but `hopper
 * permissions`, local/permissions/) and the one way they read their command line, show --help, end
 * (exit codes) and report errors (command.ts).
 *
 *   index.ts            dispatch to a command; --version
 *   command.ts          the flag table (CommandSpec), its parser, --help, exit codes, errors, --json
 *   run.ts, options.ts  hopper run and hopper local's shared options (local.ts: hopper local)
 *   out-folder.ts       <out>/<drop>/ for hopper run: checked and locked before, the model after
 *   drop-folder.ts      a local drop folder as the run's rules read it, for hopper check and
 *                       hopper run's upload; progress.ts hopper run's progress line
 *   check.ts            hopper check
 *   left-at-service.ts  what a stopped hopper run left at the training service
 *   service.ts          hopper service: the simulated service's knobs as flags
 *   target.ts           where status, runs, models and retry look: --stack or hopper local
 *   status.ts, wait.ts, runs.ts, models.ts, retry.ts   those commands
 *   doctor.ts           hopper doctor: a Hopper checked end to end, no credit spent
 *
 * It must not hold the pipeline's rules (lambdas/) or the emulator (local/emulator/): a command
 * only starts, reads or asks them.
 */
import { readFileSync } from 'node:fs';
import { PACKAGE_JSON } from '../files.js';
import { processIo, type Command, type CommandIo } from './command.js';

// Each command is loaded when asked for: --help, a refused command line or `hopper status`
// answers without loading local mode, the CDK app and the local S3 server.
export const COMMANDS: Readonly<Record<string, () => Promise<Command>>> = {
  run: async () => (await import('./run.js')).runRunCommand,
  check: async () => (await import('./check.js')).runCheckCommand,
  local: async () => (await import('./local.js')).runLocalCommand,
  service: async () => (await import('./service.js')).runServiceCommand,
  status: async () => (await import('./status.js')).runStatusCommand,
  wait: async () => (await import('./wait.js')).runWaitCommand,
  runs: async () => (await import('./runs.js')).runRunsCommand,
  models: async () => (await import('./models.js')).runModelsCommand,
  retry: async () => (await import('./retry.js')).runRetryCommand,
  doctor: async () => (await import('./doctor.js')).runDoctorCommand,
  permissions: async () => (await import('../permissions/index.js')).runPermissionsCommand,
};

const USAGE = `Usage: hopper <command> [options]

Commands:
  run <folder>      train a drop folder end to end on this machine (local mode)
  local             serve local mode for any S3 client until Ctrl-C
  service           run the simulated training service alone
  status [drop]     the latest status of one drop, or a table of every drop
  wait <drop>       wait until the drop's latest run ends; exit 0 succeeded, 1 failed, 5 timed out,
                    124 still running at --timeout
  runs <drop>       the drop's runs, newest first, with their outcome
  models            the training service's models, newest first, paged
  retry <drop>      resume a failed run from its dataset, without uploading again
  doctor            check a Hopper end to end without spending a credit: the API key, the
                    service accepting it, the bucket's events, a probe reaching the trigger,
                    the alarm topic; one line per check; exit 0 only when all hold
  check <folder>    judge a drop offline with the run's own rules, before paying: files,
                    bytes, credits it may spend, estimated cost; exit 0 or 1
  permissions       prove each function's role allows its AWS calls and no more (an IAM policy
                    simulator, @cloud-copilot/iam-simulate, AGPL-3.0: install it beside hopper;
                    --template FILE: your app's synthesized template); exit 0 or 1

status, wait, runs, models, retry and doctor talk to a deployed stack (--stack NAME; --hopper ID for
one of several in it) or to a running \`hopper local\` (the settings it prints); --json on each for
scripts. hopper status --stack NAME --links prints the stack's AWS console pages.

hopper <command> --help lists a command's options and exit codes; hopper --version its version.
`;

/** Runs `hopper <argv>`; resolves to the process exit code (servers keep running until signalled). */
export async function main(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === '--version') {
    const { version } = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string };
    io.stdout.write(`hopper ${version}\n`);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (load !== undefined) return (await load())(rest, io);
  io.stderr.write(
    command.startsWith('-')
      ? `hopper: unknown option ${command} (see hopper --help)\n`
      : `hopper: unknown command "${command}"\n\n${USAGE}`,
  );
  return 2;
}
