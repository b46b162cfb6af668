/**
 * `hopper service [options]` (also `npm run service -- [options]`): the simulated service on its
 * own until Ctrl-C. Each knob of SimulatedServiceOptions is a kebab-case flag (--reading-ms sets
 * readingMs) in the shared table (command.ts); --fault, --rename-next-action, --encoders and
 * --label-choices are read into their knobs here.
 */
import { messageOf } from '../../lambdas/core/errors/index.js';
import {
  DEFAULT_OPTIONS,
  ENDPOINTS,
  FAULT_COUNTS,
  startSimulatedService,
  validateOptions,
  type Encoder,
  type FaultRule,
  type SimulatedServiceOptions,
} from '../service/index.js';
import {
  CliUsageError,
  CommandError,
  defineCommand,
  EXIT,
  stopSignal,
  type CommandSpec,
  type Flag,
  type Parsed,
  untilStopped,
} from './command.js';

type Knob = Exclude<keyof SimulatedServiceOptions, 'faults' | 'renameNextActions' | 'trainingMetrics'>;
/** Every knob's default; manualClockStart has none. */
const DEFAULTS: Partial<SimulatedServiceOptions> = DEFAULT_OPTIONS;

/**
 * What each knob's flag says in --help, with the placeholder of a value that is not a count N; the
 * rest follows from the knob's default (a boolean's flag is a switch).
 */
const KNOB_HELP: Readonly<Record<Knob, string | readonly [value: string, help: string]>> = {
  host: ['HOST', 'interface to bind'],
  port: 'API port (0: a free port)',
  filePort: 'port of presigned file URLs (0: a free port)',
  apiKey: ['KEY', "the account's API key"],
  credits: 'credits of the account',
  seed: 'seed of the PRNG behind fault rates',
  maxRequestsPerSecond: 'API requests per second before 429 (0: no limit)',
  readingMs: 'dataset reading phase',
  structuringMs: 'dataset structuring phase',
  queuedMs: 'model queued phase',
  trainingMs: 'model training phase',
  failTrainings: 'the next N trainings fail (credit returned)',
  unreadable: 'every dataset ends reading as unreadable',
  heldOutCount: 'held-out examples per dataset',
  labelChoices: ['A,B,C', 'label choices of held-out examples'],
  encoders: ['ID:NAME[:default],...', 'encoders on offer; exactly one marked :default'],
  uploadUrlTtlMs: 'lifetime of an upload URL',
  downloadUrlTtlMs: 'lifetime of a download link',
  modelBytes: 'size of every model file',
  datasetTtlMs: 'dataset lifetime from creation',
  modelFilesTtlMs: 'model files lifetime from the end of training',
  manualClockStart: ['ISO', 'a manual clock starting at this time, instead of the system clock'],
};
const KNOBS = Object.keys(KNOB_HELP) as Knob[];
const PORT = [0, 65535] as const;
/** The counts' range where it is not 0 and up. */
const RANGES: Partial<Record<Knob, readonly [number, number]>> = {
  port: PORT,
  filePort: PORT,
  seed: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/** `readingMs` -> `reading-ms` */
function flagOf(knob: string): string {
  return knob.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

function knobFlag(knob: Knob): Flag {
  const entry = KNOB_HELP[knob];
  const [value, about] = typeof entry === 'string' ? ['N', entry] : entry;
  const help = `${about} (default: ${showDefault(knob)})`;
  if (typeof DEFAULTS[knob] === 'boolean') return { help };
  return value === 'N'
    ? { value, range: RANGES[knob] ?? [0, Number.MAX_SAFE_INTEGER], help }
    : { value, help };
}

function showDefault(knob: Knob): string {
  const value = DEFAULTS[knob];
  if (value === undefined) return 'none';
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (!Array.isArray(value)) return String(value);
  return value
    .map((item: string | Encoder) =>
      typeof item === 'string' ? item : `${item.id}:${item.name}${item.default ? ':default' : ''}`,
    )
    .join(',');
}

export const SERVICE_SPEC: CommandSpec = {
  name: 'service',
  usage: '[options]',
  about:
    'Runs the simulated training service on its own until Ctrl-C: the contract of docs/simulated-service.md, in memory, on loopback (also: npm run service -- [options]). Durations are in ms of the service clock.',
  flags: {
    ...Object.fromEntries(KNOBS.map((knob) => [flagOf(knob), knobFlag(knob)])),
    fault: {
      value: 'ENDPOINT:KIND[:k=v,...]',
      multiple: true,
      help: 'failure rule, repeatable, checked in order (default: none); see below',
    },
    'rename-next-action': {
      value: 'FROM=TO',
      multiple: true,
      help: 'records show next_action FROM as TO, a value no client knows; repeatable (default: none)',
    },
  },
  positionals: { min: 0, max: 0, what: 'arguments', hint: 'every setting is a flag' },
  exits: { 0: 'stopped by Ctrl-C (or SIGTERM), cleanly', 1: 'the service could not start or stop', 2: true },
  more: [
    'Fault rules: ENDPOINT is * or one of',
    `  ${ENDPOINTS.join(', ')}`,
    'KIND is 429, 500, 503, drop, drop_after, stall, cut (fileDownload only), expire (403 url_expired;',
    'fileUpload and fileDownload only), or a misbehaviour:',
    'garble (after processing; form=html_502|truncated|empty, default one at random), missing_field',
    '(field=NAME, default next_action), wrong_type (field=NAME, default step), huge_body (bodyBytes=N,',
    'default 10 MiB), trickle (byteIntervalMs=N, default 1000), redirect, repeat_cursor (lists),',
    'wrong_bytes (fileDownload: one byte more than onnx_bytes) or no_task (nextLabelTask: 204 while tasks are open).',
    'Settings: count=N (first N matching requests), rate=P (probability 0..1, seeded),',
    'retryAfterSeconds=N (429, default 1), stallMs=N (stall, default 5000), cutAfterBytes=N (cut, default 1024).',
    'Neither count nor rate: the rule fires on every matching request.',
    "Example: --fault startTraining:429:count=2,retryAfterSeconds=1 --fault '*:503:rate=0.1' --fault '*:garble:rate=0.08'",
  ].join('\n'),
};

/** Resolves to the exit code once the service has stopped (or could not start). */
export const runServiceCommand = defineCommand(SERVICE_SPEC, async (args, io) => {
  const options = serviceOptions(args);
  const stop = stopSignal(io);
  let service: Awaited<ReturnType<typeof startSimulatedService>>;
  try {
    service = await startSimulatedService(options);
  } catch (error) {
    throw new CommandError('failed', `the service could not start: ${messageOf(error)}`);
  }
  io.stdout.write(`API URL:  ${service.apiUrl}\nFile URL: ${service.fileUrl}\nAPI key:  ${service.apiKey}\n`);
  await untilStopped(stop);
  try {
    await service.close();
  } catch (error) {
    throw new CommandError('failed', `could not close after ${messageOf(stop.reason)}: ${messageOf(error)}`);
  }
  return EXIT.succeeded;
});

/** The service's options from a command line read by SERVICE_SPEC. */
export function serviceOptions(args: Parsed): Partial<SimulatedServiceOptions> {
  const options: Partial<Record<keyof SimulatedServiceOptions, unknown>> = {};
  for (const knob of KNOBS) {
    const flag = flagOf(knob);
    const value = args.number(flag) ?? args.text(flag) ?? (args.on(flag) || undefined);
    if (value !== undefined) options[knob] = value;
  }
  const choices = args.text('label-choices');
  if (choices !== undefined) options.labelChoices = choices.split(',').map((choice) => choice.trim());
  const encoders = args.text('encoders');
  if (encoders !== undefined) options.encoders = parseEncoders(encoders);
  const start = args.text('manual-clock-start');
  if (start !== undefined && Number.isNaN(Date.parse(start))) {
    throw new CliUsageError(`--manual-clock-start: expected an ISO time, got "${start}"`);
  }
  if (args.list('fault').length > 0) options.faults = args.list('fault').map(parseFaultFlag);
  const renames = args.list('rename-next-action');
  if (renames.length > 0) options.renameNextActions = Object.fromEntries(renames.map(parseRenameFlag));
  try {
    validateOptions({ ...DEFAULT_OPTIONS, ...(options as Partial<SimulatedServiceOptions>) });
  } catch (error) {
    // validateOptions names knobs (labelChoices, faults[0] ...): say which flag that is.
    throw new CliUsageError(
      messageOf(error).replace(/^(\w+)(\[\d+\])?/, (whole, knob: string) => {
        const flag = flagOf(knob);
        const named = [flag, flag.replace(/s$/, '')].find((name) => name in SERVICE_SPEC.flags);
        return named === undefined ? whole : `--${named}`;
      }),
    );
  }
  return options as Partial<SimulatedServiceOptions>;
}

function parseEncoders(text: string): Encoder[] {
  const encoders = text.split(',').map((item): Encoder => {
    const [id = '', name = '', mark, ...rest] = item.split(':');
    if (id === '' || name === '' || rest.length > 0 || (mark !== undefined && mark !== 'default')) {
      throw new CliUsageError(`--encoders: expected ID:NAME[:default],... got "${item}"`);
    }
    return { id: id.trim(), name: name.trim(), default: mark === 'default' };
  });
  if (encoders.filter((encoder) => encoder.default).length !== 1) {
    throw new CliUsageError('--encoders: exactly one encoder must be marked :default');
  }
  return encoders;
}

const FAULT_FIELDS = [...FAULT_COUNTS, 'rate'] as const;
/** Settings whose value is a word, not a number. */
const FAULT_WORD_FIELDS = ['form', 'field'] as const;

/**
 * `ENDPOINT:KIND[:key=value,...]`, e.g. `startTraining:429:count=2,retryAfterSeconds=1` or
 * `*:503:rate=0.1`; what the rule says is checked with the other options (validateOptions).
 */
export function parseFaultFlag(text: string): FaultRule {
  const usage = `--fault: expected ENDPOINT:KIND[:key=value,...] (keys ${[...FAULT_FIELDS, ...FAULT_WORD_FIELDS].join(', ')}), got "${text}"`;
  const [endpoint = '', kind = '', settings, ...rest] = text.split(':');
  if (rest.length > 0 || endpoint === '' || kind === '') throw new CliUsageError(usage);
  const rule = { endpoint, kind } as FaultRule;
  for (const setting of settings === undefined || settings === '' ? [] : settings.split(',')) {
    const [key = '', value, ...extra] = setting.split('=');
    if (value === undefined || extra.length > 0) throw new CliUsageError(usage);
    const word = FAULT_WORD_FIELDS.find((name) => name === key);
    if (word !== undefined) {
      (rule as unknown as Record<string, string>)[word] = value;
      continue;
    }
    const field = FAULT_FIELDS.find((name) => name === key);
    if (field === undefined) throw new CliUsageError(usage);
    const number = field === 'rate' ? Number(value) : /^\d{1,15}$/.test(value) ? Number(value) : NaN;
    if (value === '' || Number.isNaN(number)) {
      throw new CliUsageError(
        `--fault: ${field} expects ${field === 'rate' ? 'a number in 0..1' : 'an integer >= 0'}`,
      );
    }
    rule[field] = number;
  }
  return rule;
}

/** `FROM=TO`, e.g. `start_training=celebrate`. */
function parseRenameFlag(text: string): [string, string] {
  const [from = '', to = '', ...rest] = text.split('=');
  if (from === '' || to === '' || rest.length > 0) {
    throw new CliUsageError(
      `--rename-next-action: expected FROM=TO (e.g. start_training=celebrate), got "${text}"`,
    );
  }
  return [from, to];
}
