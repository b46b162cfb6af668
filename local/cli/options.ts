/**
 * The command lines of `hopper run` and `hopper local` (docs/local-mode.md), which start local
 * mode: their specs and what they make of them, read apart from the commands so that tests
 * parse without starting anything.
 */
import type { LocalModeOptions } from '../emulator/local-mode.js';
import { CliUsageError, type CommandSpec, type Flag, type Flags, type Parsed } from './command.js';
import { API_KEY_ENV } from './target.js';

/** Where `hopper run` copies models by default. */
export const DEFAULT_OUT_DIR = 'out';

/** A TCP port flag: 1..65535. */
const portFlag = (help: string): Flag => ({ value: 'N', range: [1, 65535], help });

/** The flags of both commands: the service, the local S3's port, waits and logs. */
const LOCAL_MODE_FLAGS: Flags = {
  'service-url': {
    value: 'URL',
    help: 'use this training service instead of the simulated one (needs an API key)',
  },
  'api-key': { value: 'KEY', help: `the service's API key (or set ${API_KEY_ENV}, which stays out of 'ps')` },
  's3-port': portFlag('port of the local S3 endpoint (default: a free port)'),
  'wait-ms': {
    value: 'N',
    range: [0, 3_600_000],
    help: 'sleep N ms in every Wait state instead of the polled seconds, and take a drop after N ms without a write instead of 5 s (demos, tests)',
  },
  'credit-budget': {
    value: 'N',
    range: [1, 1_000_000],
    help: 'let trainings take at most N credits in any 24 hours; a run over it stops with credit_budget (-c creditBudget=N at deploy)',
  },
  verbose: { help: "print the handlers' own logs (JSON lines)" },
};

export const RUN_SPEC: CommandSpec = {
  name: 'run',
  usage: '<folder> [options]',
  about:
    'Starts local mode, drops <folder> as inbox/<folder name>/ (train.json last), shows progress and copies the model to <out>/<folder name>/: model.onnx and model.json. The folder and --out are checked before the run starts.',
  flags: {
    out: { value: 'DIR', help: `where models go (default: ./${DEFAULT_OUT_DIR})` },
    console: {
      help: 'serve the local console (a web page on 127.0.0.1) for the run, and keep it up after the run until Ctrl-C',
    },
    'console-port': portFlag("the console's port (implies --console; default: a free port)"),
    ...LOCAL_MODE_FLAGS,
  },
  positionals: { min: 1, max: 1, what: 'folder to drop', hint: 'hopper run examples/reviews' },
  exits: {
    0: 'the run succeeded; the model is in <out>/<drop>/',
    1: "the run failed, or the run's rules refused the folder before anything was sent (as hopper check does): the error code and message are printed",
    2: 'a bad command line, or an --out the model could not be saved in (checked before the run starts)',
    3: true,
    4: true,
    130: true,
  },
};

export const LOCAL_SPEC: CommandSpec = {
  name: 'local',
  usage: '[options]',
  about:
    "Starts local mode and keeps serving until Ctrl-C. Prints the training service's URL and, as lines a shell can eval, the settings an S3 client needs (AWS_ENDPOINT_URL, credentials, region, HOPPER_BUCKET). A folder copied into s3://$HOPPER_BUCKET/inbox/<drop>/, train.json last, trains; its model appears under models/<drop>/ and its state in status/<drop>.json.",
  flags: {
    'console-port': portFlag("the local console's port on 127.0.0.1 (default: a free port)"),
    'no-console': { help: 'do not serve the local console' },
    'data-dir': {
      value: 'DIR',
      help: "keep the local bucket and the simulated service's records in DIR across restarts (default: a temporary folder)",
    },
    ...LOCAL_MODE_FLAGS,
  },
  positionals: { min: 0, max: 0, what: 'folder', hint: 'copy drops in with any S3 client' },
  exits: { 0: 'stopped by Ctrl-C (or SIGTERM) after serving', 1: 'local mode could not start', 2: true },
};

export interface LocalCommandOptions {
  readonly mode: LocalModeOptions;
  /** The local console (local/console/): served unless `enabled` is false, on `port` (default: a free port). */
  readonly console?: { readonly enabled: boolean; readonly port?: number };
}

/** What a command line of `hopper run` asks: the folder, where its model goes, and local mode. */
export function runOptions(
  args: Parsed,
  env: NodeJS.ProcessEnv,
): { readonly folder: string; readonly out: string; readonly options: LocalCommandOptions } {
  return {
    folder: args.positionals[0] ?? '',
    out: args.text('out') ?? DEFAULT_OUT_DIR,
    options: localModeOptions(args, env, false),
  };
}

/**
 * What a command line of `hopper run` or `hopper local` asks of local mode; `consoleByDefault`:
 * whether the console is served without a flag.
 */
export function localModeOptions(
  args: Parsed,
  env: NodeJS.ProcessEnv,
  consoleByDefault: boolean,
): LocalCommandOptions {
  const serviceUrl = args.text('service-url');
  const keyFlag = args.text('api-key');
  const apiKey = keyFlag ?? (env[API_KEY_ENV]?.trim() || undefined);
  let service: LocalModeOptions['service'];
  if (serviceUrl !== undefined) {
    if (!/^https?:\/\/[^\s]+$/.test(serviceUrl) || !URL.canParse(serviceUrl)) {
      throw new CliUsageError(`--service-url: expected an http(s) URL, got "${serviceUrl}"`);
    }
    if (apiKey === undefined) {
      throw new CliUsageError(
        `--service-url needs the service's API key: give --api-key KEY or set ${API_KEY_ENV}`,
      );
    }
    service = { url: serviceUrl, apiKey };
  } else if (keyFlag !== undefined) {
    throw new CliUsageError('--api-key is for --service-url; the simulated service needs no key from you');
  }
  const port = args.number('console-port');
  if (args.on('no-console') && port !== undefined) {
    throw new CliUsageError('--no-console and --console-port contradict each other: give one of them');
  }
  const enabled = !args.on('no-console') && (consoleByDefault || args.on('console') || port !== undefined);
  const s3Port = args.number('s3-port');
  const waitMs = args.number('wait-ms');
  const perDay = args.number('credit-budget');
  const dataDir = args.text('data-dir');
  return {
    console: { enabled, ...(port === undefined ? {} : { port }) },
    mode: {
      ...(service === undefined ? {} : { service }),
      ...(s3Port === undefined ? {} : { s3Port }),
      ...(waitMs === undefined ? {} : { waitMs, dropQuietMs: waitMs }),
      ...(perDay === undefined ? {} : { creditBudget: { perDay } }),
      ...(dataDir === undefined ? {} : { dataDir }),
      logLevel: args.on('verbose') ? 'INFO' : 'SILENT',
    },
  };
}
