/**
 * The command line of `hopper run` and `hopper local` (DESIGN.md section 3), parsed and checked
 * apart from the commands so tests can parse without starting anything.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliUsageError } from './service-args.js';
import type { LocalModeOptions } from '../emulator/local-mode.js';

export { CliUsageError };

/** Where `hopper run` copies models by default. */
export const DEFAULT_OUT_DIR = 'out';
/** The environment variable read when --api-key is not given (keeps the key out of `ps`). */
export const API_KEY_ENV = 'HOPPER_API_KEY';

const COMMON_HELP = `  --service-url URL   use this training service instead of the simulated one (needs an API key)
  --api-key KEY       the service's API key (or set ${API_KEY_ENV}, which stays out of 'ps')
  --s3-port N         port of the local S3 endpoint (default: a free port)
  --wait-ms N         sleep N ms in every Wait state instead of the polled seconds, and take
                      a drop after N ms without a write instead of 5 s (demos, tests)
  --verbose           print the handlers' own logs (JSON lines)
  -h, --help          show this help`;

export const RUN_HELP = `Usage: hopper run <folder> [options]

Starts local mode, drops <folder> as inbox/<folder name>/ (train.json last), shows progress and
copies the model to <out>/<folder name>/: model.onnx and model.json. Exit code 0 when the run
succeeds, 1 when it fails (its error code and message are printed), 2 on a bad command line,
folder or --out (checked before the run starts), 3 when the run succeeded but the model could not
be saved to --out (it is kept; the command prints where).

Options:
  --out DIR           where models go (default: ./${DEFAULT_OUT_DIR})
  --console           serve the local console (a web page on 127.0.0.1) for the run, and keep it
                      up after the run until Ctrl-C
  --console-port N    the console's port (implies --console; default: a free port)
${COMMON_HELP}
`;

export const LOCAL_HELP = `Usage: hopper local [options]

Starts local mode and keeps serving until Ctrl-C. Prints the training service's URL and, as
lines a shell can eval, the settings an S3 client needs (AWS_ENDPOINT_URL, credentials, region,
HOPPER_BUCKET). A folder copied into s3://$HOPPER_BUCKET/inbox/<drop>/, train.json last, trains;
its model appears under models/<drop>/ and its state in status/<drop>.json.

Options:
  --console-port N    the local console's port on 127.0.0.1 (default: a free port)
  --no-console        do not serve the local console
  --data-dir DIR      keep the local bucket and the simulated service's records in DIR across
                      restarts (default: a temporary folder)
${COMMON_HELP}
`;

export interface LocalCommandOptions {
  readonly mode: LocalModeOptions;
  readonly verbose: boolean;
  /** The local console (local/console/): served unless `enabled` is false. */
  readonly console?: ConsoleChoice;
}

export interface ConsoleChoice {
  readonly enabled: boolean;
  /** Default: a free port. */
  readonly port?: number;
}

export type ParsedRun =
  | { readonly kind: 'help' }
  | {
      readonly kind: 'run';
      readonly folder: string;
      readonly out: string;
      readonly options: LocalCommandOptions;
    };

export type ParsedLocal =
  { readonly kind: 'help' } | { readonly kind: 'local'; readonly options: LocalCommandOptions };

const COMMON_FLAGS = {
  'service-url': { type: 'string' },
  'api-key': { type: 'string' },
  's3-port': { type: 'string' },
  'wait-ms': { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const RUN_CONSOLE_FLAGS = {
  console: { type: 'boolean' },
  'console-port': { type: 'string' },
} as const;

const LOCAL_CONSOLE_FLAGS = {
  'console-port': { type: 'string' },
  'no-console': { type: 'boolean' },
  'data-dir': { type: 'string' },
} as const;

export function parseRunArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParsedRun {
  const { values, positionals } = parse(
    argv,
    { ...COMMON_FLAGS, ...RUN_CONSOLE_FLAGS, out: { type: 'string' } },
    true,
  );
  if (values.help === true) return { kind: 'help' };
  if (positionals.length !== 1) {
    throw new CliUsageError(
      positionals.length === 0
        ? 'give the folder to drop, e.g. hopper run examples/reviews'
        : `give one folder, got ${String(positionals.length)}: ${positionals.join(' ')}`,
    );
  }
  const out = typeof values.out === 'string' ? values.out : DEFAULT_OUT_DIR;
  if (out === '') throw new CliUsageError('--out: expected a folder, got an empty string');
  return {
    kind: 'run',
    folder: positionals[0] ?? '',
    out,
    options: withConsole(commonOptions(values, env), values, false),
  };
}

export function parseLocalArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParsedLocal {
  const { values, positionals } = parse(argv, { ...COMMON_FLAGS, ...LOCAL_CONSOLE_FLAGS }, true);
  if (values.help === true) return { kind: 'help' };
  if (positionals.length > 0) {
    throw new CliUsageError(
      `hopper local takes no folder (got ${positionals.join(' ')}); copy drops in with any S3 client`,
    );
  }
  return { kind: 'local', options: withConsole(commonOptions(values, env), values, true) };
}

/** The console's flags and --data-dir; `byDefault`: whether the console is on without a flag. */
function withConsole(options: LocalCommandOptions, values: Values, byDefault: boolean): LocalCommandOptions {
  const port = integerFlag(values, 'console-port', 1, 65535);
  if (values['no-console'] === true && port !== undefined) {
    throw new CliUsageError('--no-console and --console-port contradict each other: give one of them');
  }
  const enabled =
    values['no-console'] !== true && (byDefault || values.console === true || port !== undefined);
  const dataDir = stringValue(values['data-dir']);
  if (dataDir === '') throw new CliUsageError('--data-dir: expected a folder, got an empty string');
  return {
    ...options,
    console: { enabled, ...(port === undefined ? {} : { port }) },
    mode: { ...options.mode, ...(dataDir === undefined ? {} : { dataDir }) },
  };
}

type Values = Record<string, string | boolean | undefined>;

function parse(
  argv: readonly string[],
  options: NonNullable<ParseArgsConfig['options']>,
  allowPositionals: boolean,
): { values: Values; positionals: string[] } {
  try {
    const parsed = parseArgs({ args: [...argv], options, allowPositionals, strict: true });
    return { values: parsed.values as Values, positionals: parsed.positionals };
  } catch (error) {
    // node:util names the flag in its message; the code is noise to a person.
    throw new CliUsageError(error instanceof Error ? error.message.replace(/^.*?: /, '') : String(error));
  }
}

function commonOptions(values: Values, env: NodeJS.ProcessEnv): LocalCommandOptions {
  const serviceUrl = stringValue(values['service-url']);
  const keyFlag = stringValue(values['api-key']);
  // Refused, not read as "no key": a blank key would start local mode and fail the run later.
  if (keyFlag !== undefined && nonEmpty(keyFlag) === undefined) {
    throw new CliUsageError(
      `--api-key: expected the service's API key, got an empty string; give the key, or leave the flag out and set ${API_KEY_ENV}`,
    );
  }
  const apiKey = keyFlag ?? nonEmpty(env[API_KEY_ENV]);
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
  const s3Port = integerFlag(values, 's3-port', 1, 65535);
  const waitMs = integerFlag(values, 'wait-ms', 0, 3_600_000);
  const verbose = values.verbose === true;
  return {
    verbose,
    mode: {
      ...(service === undefined ? {} : { service }),
      ...(s3Port === undefined ? {} : { s3Port }),
      ...(waitMs === undefined ? {} : { waitMs, dropQuietMs: waitMs }),
      logLevel: verbose ? 'INFO' : 'SILENT',
    },
  };
}

function integerFlag(values: Values, flag: string, min: number, max: number): number | undefined {
  const text = stringValue(values[flag]);
  if (text === undefined) return undefined;
  const value = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new CliUsageError(`--${flag}: expected an integer ${String(min)}..${String(max)}, got "${text}"`);
  }
  return value;
}

function stringValue(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
