/**
 * What every hopper command shares: its flags as a declarative table (CommandSpec), the one
 * parser that reads a command line by it (node:util parseArgs, then ranges and allowed values),
 * the --help it prints from it, the exit codes, and how a command reports an error: a line
 * `hopper <command>: <message>` on stderr, or, when --json is on the command line, the object
 * `{"error": {"code", "message"}}` on stdout; the exit code is the same either way.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { messageOf } from '../../lambdas/core/errors/index.js';
import type { CloudFormationClientConfig } from '@aws-sdk/client-cloudformation';
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { SecretsManagerClientConfig } from '@aws-sdk/client-secrets-manager';
import type { SFNClientConfig } from '@aws-sdk/client-sfn';
import type { SNSClientConfig } from '@aws-sdk/client-sns';

/** Settings that replace the SDK's defaults per AWS service (tests point them at loopback). */
export interface AwsOverrides {
  readonly cloudformation?: CloudFormationClientConfig;
  readonly s3?: S3ClientConfig;
  readonly sfn?: SFNClientConfig;
  readonly secretsmanager?: SecretsManagerClientConfig;
  readonly sns?: SNSClientConfig;
}

export interface CommandDeps {
  readonly env: NodeJS.ProcessEnv;
  readonly aws?: AwsOverrides;
  readonly now?: () => number;
}

/** The exit codes of the hopper commands: one meaning each, in every command. */
export const EXIT = {
  succeeded: 0,
  failed: 1,
  usage: 2,
  notSaved: 3,
  busy: 4,
  timedOut: 5,
  stillRunning: 124,
  stopped: 130,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

const EXIT_MEANINGS: Readonly<Record<ExitCode, string>> = {
  0: 'done',
  1: 'failed: the message says why and what to do',
  2: 'a bad command line (nothing was started)',
  3: 'the run succeeded, but the model could not be saved to --out: it is kept, and the message says where',
  4: "refused: a training of this folder's dataset is still under way at the service (an earlier run that was stopped); starting another would spend a second credit",
  5: "the run timed out: Step Functions stopped it at the state machine's execution timeout",
  124: 'the run was still going when --timeout passed (as timeout(1) exits)',
  130: 'stopped by Ctrl-C (or SIGTERM)',
};

/** One flag of a command. */
export interface Flag {
  /** The value's placeholder in --help (`N`, `DIR`); a flag without one is a switch. */
  readonly value?: string;
  readonly help: string;
  /** An integer flag's bounds. */
  readonly range?: readonly [min: number, max: number];
  /** The only values the flag takes. */
  readonly choices?: readonly string[];
  /** May be given more than once; its values are kept in order. */
  readonly multiple?: boolean;
}

export type Flags = Readonly<Record<string, Flag>>;

/** `--limit N`: show at most N `things`, `byDefault` unless given, never more than `max`. */
export function limitFlag(things: string, byDefault: number, max: number): Flag {
  return {
    value: 'N',
    range: [1, max],
    help: `show at most N ${things} (default ${String(byDefault)}, at most ${String(max)})`,
  };
}

/** A command's command line: what the parser checks, and what --help says. */
export interface CommandSpec {
  readonly name: string;
  /** What follows `hopper <name>` in the usage line, e.g. `<folder> [options]`. */
  readonly usage: string;
  readonly about: string;
  readonly flags: Flags;
  /** How many arguments the command takes, what the first is, and a hint on giving it (or not). */
  readonly positionals: {
    readonly min: number;
    readonly max: number;
    readonly what: string;
    readonly hint: string;
  };
  /** The exit codes it ends with: `true` for the common meaning, or its own words. */
  readonly exits: Readonly<Partial<Record<ExitCode, true | string>>>;
  /** Text after the exit codes. */
  readonly more?: string;
}

/** What every command writes to and how it is stopped. */
export interface CommandIo {
  readonly stdout: Writable & { isTTY?: boolean };
  readonly stderr: Writable;
  /** Stops the command as Ctrl-C does. Default: SIGINT and SIGTERM. */
  readonly signal?: AbortSignal;
}

export function processIo(): CommandIo {
  return { stdout: process.stdout, stderr: process.stderr };
}

/** What stops a command: its io's signal, else the first SIGINT or SIGTERM. */
export function stopSignal({ signal }: CommandIo): AbortSignal {
  return signal ?? processSignals().signal;
}

/** The commands of this process that the next SIGINT or SIGTERM stops (processSignals). */
const stoppedBySignal = new Set<AbortController>();

/** Stops every command waiting on a signal; the next one is Node's again (a second Ctrl-C kills). */
function onProcessSignal(signal: NodeJS.Signals): void {
  for (const controller of stoppedBySignal) controller.abort(new Error(`stopped by ${signal}`));
  stoppedBySignal.clear();
  listenForSignals(false);
}

function listenForSignals(on: boolean): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    if (on) process.on(signal, onProcessSignal);
    else process.off(signal, onProcessSignal);
  }
}

/**
 * An AbortSignal the first SIGINT or SIGTERM aborts, and `remove`, which lets it go again. The
 * commands running in one process share one listener of each signal, which the last to end takes
 * off: commands run at once or one after another in a process that outlives them (the tests, a
 * script) pass no listener limit and leave none behind.
 */
function processSignals(): { readonly signal: AbortSignal; remove(): void } {
  const controller = new AbortController();
  if (stoppedBySignal.size === 0) listenForSignals(true);
  stoppedBySignal.add(controller);
  return {
    signal: controller.signal,
    remove: () => {
      if (stoppedBySignal.delete(controller) && stoppedBySignal.size === 0) listenForSignals(false);
    },
  };
}

/** Resolves when `signal` aborts (at once if it has). */
export async function untilStopped(signal: AbortSignal): Promise<void> {
  if (!signal.aborted) await once(signal, 'abort');
}

/** A failure a command reports as is, with a stable code for --json: what is wrong and what to do. */
export class CommandError extends Error {
  override readonly name: string = 'CommandError';

  constructor(
    readonly code: string,
    message: string,
    readonly exit: ExitCode = EXIT.failed,
  ) {
    super(message);
  }

  /** How its text output (not --json) says it. */
  get text(): string {
    return this.message;
  }
}

/** A bad command line: the message names the flag or argument and what it expects (exit 2). */
export class CliUsageError extends CommandError {
  override readonly name: string = 'CliUsageError';

  constructor(message: string) {
    super('usage', message, EXIT.usage);
  }
}

/** A command line read by its spec. */
export class Parsed {
  constructor(
    readonly positionals: readonly string[],
    private readonly values: ReadonlyMap<string, string | number | true | readonly (string | number)[]>,
  ) {}

  text(flag: string): string | undefined {
    const value = this.values.get(flag);
    return typeof value === 'string' ? value : undefined;
  }

  number(flag: string): number | undefined {
    const value = this.values.get(flag);
    return typeof value === 'number' ? value : undefined;
  }

  on(flag: string): boolean {
    return this.values.get(flag) === true;
  }

  list(flag: string): readonly string[] {
    const value = this.values.get(flag);
    return Array.isArray(value) ? value.map(String) : [];
  }
}

/**
 * Reads `argv` by `spec`; 'help' when it asks for help.
 * @throws CliUsageError naming what is wrong
 */
export function parseCommand(spec: CommandSpec, argv: readonly string[]): Parsed | 'help' {
  const options = Object.fromEntries(
    Object.entries(spec.flags).map(([name, flag]) => [
      name,
      { type: flag.value === undefined ? 'boolean' : 'string', multiple: flag.multiple === true },
    ]),
  ) as Record<string, { type: 'boolean' | 'string'; multiple: boolean }>;
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new CliUsageError(parseArgsProblem(spec, error));
  }
  if (parsed.values.help === true) return 'help';
  const { positionals } = parsed;
  const { min, max, what, hint } = spec.positionals;
  const given = positionals.join(' ');
  if (positionals.length < min) throw new CliUsageError(`give the ${what}, e.g. ${hint}`);
  if (positionals.length > max) {
    throw new CliUsageError(
      max === 0
        ? `takes no ${what} (got ${given}): ${hint}`
        : `give one ${what}, got ${String(positionals.length)}: ${given}`,
    );
  }
  const values = new Map<string, string | number | true | readonly (string | number)[]>();
  for (const [name, flag] of Object.entries(spec.flags)) {
    const value = parsed.values[name] as string | boolean | string[] | undefined;
    const check = (text: string): string | number => checked(name, flag, text);
    if (typeof value === 'boolean') values.set(name, true);
    else if (typeof value === 'string') values.set(name, check(value));
    else if (value !== undefined) values.set(name, value.map(check));
  }
  return new Parsed(positionals, values);
}

/** node:util's complaint as a line a person reads: the flag, and where to look. */
function parseArgsProblem(spec: CommandSpec, error: unknown): string {
  const message = messageOf(error);
  const option = /'(-[^' ]*)/.exec(message)?.[1] ?? message;
  const help = `(see hopper ${spec.name} --help)`;
  if ((error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    return `unknown option ${option} ${help}`;
  }
  const flag = spec.flags[option.replace(/^--/, '')];
  return flag?.value === undefined
    ? `${option} takes no value ${help}`
    : `${option} needs a value: ${option} ${flag.value} ${help}`;
}

/** A flag's value, checked against its range or allowed values. */
function checked(name: string, flag: Flag, text: string): string | number {
  if (text.trim() === '' && flag.range === undefined) {
    throw new CliUsageError(`--${name}: got an empty string; give ${flag.value ?? ''}: ${flag.help}`);
  }
  if (flag.choices !== undefined && !flag.choices.includes(text)) {
    throw new CliUsageError(`--${name}: expected one of ${flag.choices.join(', ')}, got "${text}"`);
  }
  if (flag.range === undefined) return text;
  const [min, max] = flag.range;
  const value = /^-?\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    const bounds =
      max >= Number.MAX_SAFE_INTEGER
        ? min <= Number.MIN_SAFE_INTEGER
          ? ''
          : ` >= ${String(min)}`
        : ` ${String(min)}..${String(max)}`;
    throw new CliUsageError(`--${name}: expected an integer${bounds}, got "${text}"`);
  }
  return value;
}

/** The command's --help, from its spec. */
export function helpText(spec: CommandSpec): string {
  const options: [string, string][] = Object.entries(spec.flags).map(([name, flag]) => [
    `--${name}${flag.value === undefined ? '' : ` ${flag.value}`}`,
    flag.help,
  ]);
  options.push(['-h, --help', 'show this help']);
  const exits: [string, string][] = Object.entries(spec.exits).map(([code, meaning]) => [
    code,
    meaning === true ? EXIT_MEANINGS[Number(code) as ExitCode] : meaning,
  ]);
  return [
    `Usage: hopper ${spec.name} ${spec.usage}`,
    '',
    ...wrap(spec.about, 0),
    '',
    'Options:',
    ...columns(options),
    '',
    'Exit codes:',
    ...columns(exits),
    ...(spec.more === undefined ? [] : ['', spec.more]),
    '',
  ].join('\n');
}

const WIDTH = 100;

/** Two columns, the right one wrapped under itself. */
function columns(rows: readonly [string, string][]): string[] {
  const left = Math.max(...rows.map(([name]) => name.length)) + 4;
  return rows.flatMap(([name, text]) => {
    const [first = '', ...rest] = wrap(text, left);
    return [`  ${name.padEnd(left - 2)}${first.trimStart()}`, ...rest];
  });
}

/** `text` in lines of at most WIDTH characters, each indented by `indent` spaces. */
function wrap(text: string, indent: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && indent + line.length + 1 + word.length > WIDTH) {
      lines.push(' '.repeat(indent) + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, ' '.repeat(indent) + line];
}

/** A command: run with its arguments, it resolves to the exit code; `spec` is its command line. */
export type Command = ((argv: readonly string[], io?: CommandIo, deps?: CommandDeps) => Promise<number>) & {
  readonly spec: CommandSpec;
};

/**
 * The command `spec` describes, `body` doing its work: it reads the command line, answers
 * --help, runs `body`, and reports what that throws (as JSON on stdout when --json is on the
 * command line).
 */
export function defineCommand(
  spec: CommandSpec,
  body: (args: Parsed, io: CommandIo, deps: CommandDeps) => Promise<number>,
): Command {
  const run = async (
    argv: readonly string[],
    io = processIo(),
    deps: CommandDeps = { env: process.env },
  ): Promise<number> => {
    // Stopped by its io's signal, else by SIGINT or SIGTERM while it runs (stopSignal).
    const signals = io.signal === undefined ? processSignals() : undefined;
    const stoppable = signals === undefined ? io : { ...io, signal: signals.signal };
    try {
      const args = parseCommand(spec, argv);
      if (args !== 'help') return await body(args, stoppable, deps);
      io.stdout.write(helpText(spec));
      return EXIT.succeeded;
    } catch (error) {
      const failure = error instanceof CommandError ? error : new CommandError('failed', messageOf(error));
      if (argv.includes('--json'))
        io.stdout.write(json({ error: { code: failure.code, message: failure.message } }));
      else io.stderr.write(`hopper ${spec.name}: ${failure.text}\n`);
      return failure.exit;
    } finally {
      signals?.remove();
    }
  };
  return Object.assign(run, { spec });
}

/** `rows` under `header`, each column as wide as its widest cell, two spaces apart. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

/** A duration as a person reads it: 42s, 5m, 3h, 2d. */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${String(seconds)}s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${String(minutes)}m`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${String(hours)}h`;
  return `${String(Math.round(hours / 24))}d`;
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
