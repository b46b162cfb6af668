/**
 * Command-line arguments of the simulated service -> SimulatedServiceOptions. Kept apart from
 * cli.ts so tests can parse arguments without spawning a process.
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_OPTIONS,
  ENDPOINTS,
  validateFaultRule,
  validateOptions,
  type Encoder,
  type FaultRule,
  type SimulatedServiceOptions,
} from './options.js';

/** A bad command line: the message names the flag and what it expects (exit code 2). */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}

export type CliCommand =
  { kind: 'help'; text: string } | { kind: 'run'; options: Partial<SimulatedServiceOptions> };

type Knob = Exclude<keyof SimulatedServiceOptions, 'faults' | 'renameNextActions'>;

interface FlagSpec {
  flag: string;
  knob: Knob;
  /** How the value is written, for --help and error messages. */
  value: string;
  help: string;
  parse: (text: string) => SimulatedServiceOptions[Knob];
}

const NON_NEGATIVE = 'an integer >= 0';

function integer(flag: string, text: string, allowNegative = false): number {
  const pattern = allowNegative ? /^-?\d{1,15}$/ : /^\d{1,15}$/;
  if (!pattern.test(text)) {
    throw new CliUsageError(
      `--${flag}: expected ${allowNegative ? 'an integer' : NON_NEGATIVE}, got "${text}"`,
    );
  }
  return Number(text);
}

const intFlag = (flag: string, knob: Knob, help: string): FlagSpec => ({
  flag,
  knob,
  value: 'N',
  help,
  parse: (text) => integer(flag, text),
});

const portFlag = (flag: string, knob: Knob, help: string): FlagSpec => ({
  ...intFlag(flag, knob, help),
  parse: (text) => {
    const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
    if (!(port <= 65535)) throw new CliUsageError(`--${flag}: expected a port 0..65535, got "${text}"`);
    return port;
  },
});

const FLAGS: readonly FlagSpec[] = [
  { flag: 'host', knob: 'host', value: 'HOST', help: 'interface to bind', parse: (text) => text },
  portFlag('port', 'port', 'API port (0: a free port)'),
  portFlag('file-port', 'filePort', 'port of presigned file URLs (0: a free port)'),
  { flag: 'api-key', knob: 'apiKey', value: 'KEY', help: "the account's API key", parse: (text) => text },
  intFlag('credits', 'credits', 'credits of the account'),
  {
    flag: 'seed',
    knob: 'seed',
    value: 'N',
    help: 'seed of the PRNG behind fault rates',
    parse: (text) => integer('seed', text, true),
  },
  intFlag(
    'max-requests-per-second',
    'maxRequestsPerSecond',
    'API requests per second before 429 (0: no limit)',
  ),
  intFlag('reading-ms', 'readingMs', 'dataset reading phase'),
  intFlag('structuring-ms', 'structuringMs', 'dataset structuring phase'),
  intFlag('queued-ms', 'queuedMs', 'model queued phase'),
  intFlag('training-ms', 'trainingMs', 'model training phase'),
  intFlag('fail-trainings', 'failTrainings', 'the next N trainings fail (credit returned)'),
  intFlag('held-out-count', 'heldOutCount', 'held-out examples per dataset'),
  {
    flag: 'label-choices',
    knob: 'labelChoices',
    value: 'A,B,C',
    help: 'label choices of held-out examples',
    parse: (text) => text.split(',').map((choice) => choice.trim()),
  },
  {
    flag: 'encoders',
    knob: 'encoders',
    value: 'ID:NAME[:default],...',
    help: 'encoders on offer; exactly one marked :default',
    parse: parseEncoders,
  },
  intFlag('upload-url-ttl-ms', 'uploadUrlTtlMs', 'lifetime of an upload URL'),
  intFlag('download-url-ttl-ms', 'downloadUrlTtlMs', 'lifetime of a download link'),
  intFlag('model-bytes', 'modelBytes', 'size of every model file'),
  intFlag('dataset-ttl-ms', 'datasetTtlMs', 'dataset lifetime from creation'),
  intFlag('model-files-ttl-ms', 'modelFilesTtlMs', 'model files lifetime from the end of training'),
  {
    flag: 'manual-clock-start',
    knob: 'manualClockStart',
    value: 'ISO',
    help: 'a manual clock starting at this time, instead of the system clock',
    parse: (text) => {
      if (Number.isNaN(Date.parse(text))) {
        throw new CliUsageError(`--manual-clock-start: expected an ISO time, got "${text}"`);
      }
      return text;
    },
  },
];

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

const FAULT_FIELDS = [
  'count',
  'rate',
  'retryAfterSeconds',
  'stallMs',
  'cutAfterBytes',
  'bodyBytes',
  'byteIntervalMs',
] as const;
/** Settings whose value is a word, not a number. */
const FAULT_WORD_FIELDS = ['form', 'field'] as const;

/** `ENDPOINT:KIND[:key=value,...]`, e.g. `startTraining:429:count=2,retryAfterSeconds=1` or `*:503:rate=0.1`. */
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
      // Checked with the rule below (validateFaultRule names a form or field it does not know).
      (rule as unknown as Record<string, string>)[word] = value;
      continue;
    }
    const field = FAULT_FIELDS.find((name) => name === key);
    if (field === undefined) throw new CliUsageError(usage);
    const number = field === 'rate' ? Number(value) : /^\d{1,15}$/.test(value) ? Number(value) : NaN;
    if (value === '' || Number.isNaN(number)) {
      throw new CliUsageError(
        `--fault: ${field} expects ${field === 'rate' ? 'a number in 0..1' : NON_NEGATIVE}`,
      );
    }
    rule[field] = number;
  }
  try {
    validateFaultRule(rule, '--fault');
  } catch (error) {
    throw new CliUsageError((error as Error).message);
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

function showDefault(knob: Knob): string {
  const value = DEFAULT_OPTIONS[knob];
  if (value === undefined) return 'none';
  if (Array.isArray(value)) {
    return value
      .map((item) =>
        typeof item === 'string' ? item : `${item.id}:${item.name}${item.default ? ':default' : ''}`,
      )
      .join(',');
  }
  return String(value);
}

export function helpText(): string {
  const rows: [string, string][] = FLAGS.map((spec) => [
    `--${spec.flag} ${spec.value}`,
    `${spec.help} (default: ${showDefault(spec.knob)})`,
  ]);
  rows.push(['--unreadable', 'every dataset ends reading as unreadable (default: off)']);
  rows.push([
    '--fault ENDPOINT:KIND[:k=v,...]',
    'failure rule, repeatable, checked in order (default: none); see below',
  ]);
  rows.push([
    '--rename-next-action FROM=TO',
    'records show next_action FROM as TO, a value no client knows; repeatable (default: none)',
  ]);
  rows.push(['--help, -h', 'show this help']);
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return [
    'Simulated training service: the contract of docs/simulated-service.md, in memory, on loopback.',
    '',
    'Usage: hopper service [flags]  or  npm run service -- [flags]   (durations in ms of the service clock)',
    '',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`),
    '',
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
  ].join('\n');
}

/** Parses the arguments (without node and the script); throws CliUsageError on a bad one. */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  const config = Object.fromEntries(FLAGS.map((spec) => [spec.flag, { type: 'string' as const }]));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        ...config,
        unreadable: { type: 'boolean' },
        fault: { type: 'string', multiple: true },
        'rename-next-action': { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: false,
      strict: true,
    });
  } catch (error) {
    throw new CliUsageError((error as Error).message);
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (values.help === true) return { kind: 'help', text: helpText() };

  const options: Partial<SimulatedServiceOptions> = {};
  const assign = options as Record<string, unknown>;
  for (const spec of FLAGS) {
    const text = values[spec.flag];
    if (typeof text === 'string') assign[spec.knob] = spec.parse(text);
  }
  if (values.unreadable === true) options.unreadable = true;
  const faults = values.fault;
  if (Array.isArray(faults)) options.faults = faults.map(parseFaultFlag);
  const renames = values['rename-next-action'];
  if (Array.isArray(renames)) options.renameNextActions = Object.fromEntries(renames.map(parseRenameFlag));
  try {
    validateOptions({ ...DEFAULT_OPTIONS, ...options });
  } catch (error) {
    // validateOptions names knobs (labelChoices ...); say which flag that is.
    const message = (error as Error).message;
    if (message.startsWith('renameNextActions:')) {
      throw new CliUsageError(`--rename-next-action${message.slice('renameNextActions'.length)}`);
    }
    const spec = FLAGS.find((candidate) => message.startsWith(`${candidate.knob} `));
    throw new CliUsageError(
      spec === undefined ? message : `--${spec.flag}${message.slice(spec.knob.length)}`,
    );
  }
  return { kind: 'run', options };
}
