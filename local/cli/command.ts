/**
 * What `hopper status`, `runs`, `models` and `retry` share: their flags (`--stack NAME`,
 * `--json`, `--help`), finding the Hopper they talk to (target.ts), and how they end: 0 done,
 * 1 failed (with a message saying what to do), 2 a bad command line.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { messageOf } from '../../lambdas/run/errors.js';
import { ServiceError } from '../../lambdas/service-client/index.js';
import { EXIT, processIo, type CommandIo } from './command-io.js';
import { CliUsageError } from './service-args.js';
import { CommandError, resolveTarget, type CommandDeps, type Target } from './target.js';

export { CommandError, CliUsageError, EXIT, type CommandDeps, type CommandIo };

/** Where the commands look, for their --help. */
export const TARGET_HELP = `  --stack NAME        a deployed stack (its outputs, with your AWS credentials and region);
                      without it, the \`hopper local\` whose printed settings are in the environment
  --json              print JSON for scripts
  -h, --help          show this help`;

type Flags = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | undefined>;

export interface CommandSpec {
  /** `status`, `runs`, ...: for messages. */
  readonly name: string;
  readonly help: string;
  readonly flags?: Flags;
  /** How many positionals the command takes, and what the first is called. */
  readonly positionals: { readonly min: number; readonly max: number; readonly what: string };
}

export interface ParsedCommand {
  readonly values: Values;
  readonly positionals: readonly string[];
  readonly json: boolean;
}

/** Runs a command: parses argv, finds the target, runs `body`, reports failures, closes clients. */
export async function runCommand(
  spec: CommandSpec,
  argv: readonly string[],
  body: (parsed: ParsedCommand, target: Target, io: CommandIo, deps: CommandDeps) => Promise<number>,
  io: CommandIo = processIo(),
  deps: CommandDeps = { env: process.env },
): Promise<number> {
  let parsed: ParsedCommand & { stack: string | undefined };
  try {
    const result = parseCommand(spec, argv);
    if (result === 'help') {
      io.stdout.write(spec.help);
      return EXIT.succeeded;
    }
    parsed = result;
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    io.stderr.write(`hopper ${spec.name}: ${error.message}\n`);
    return EXIT.usage;
  }
  let target: Target | undefined;
  try {
    target = await resolveTarget(parsed.stack, deps);
    return await body(parsed, target, io, deps);
  } catch (error) {
    if (error instanceof CliUsageError) {
      io.stderr.write(`hopper ${spec.name}: ${error.message}\n`);
      return EXIT.usage;
    }
    io.stderr.write(`hopper ${spec.name}: ${describeError(error)}\n`);
    return EXIT.failed;
  } finally {
    target?.close();
  }
}

function describeError(error: unknown): string {
  if (error instanceof CommandError) return error.message;
  if (error instanceof ServiceError && error.code === 'unauthorized') {
    return "the training service refused the API key: check the key (HOPPER_API_KEY, or the stack's secret)";
  }
  if (error instanceof ServiceError) return `the training service failed: ${error.message}`;
  return messageOf(error);
}

function parseCommand(
  spec: CommandSpec,
  argv: readonly string[],
): 'help' | (ParsedCommand & { stack: string | undefined }) {
  let values: Values;
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: {
        ...spec.flags,
        stack: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
    values = parsed.values;
    positionals = parsed.positionals;
  } catch (error) {
    throw new CliUsageError(error instanceof Error ? error.message.replace(/^.*?: /, '') : String(error));
  }
  if (values.help === true) return 'help';
  const { min, max, what } = spec.positionals;
  if (positionals.length < min) throw new CliUsageError(`give the ${what}, e.g. hopper ${spec.name} reviews`);
  if (positionals.length > max) {
    throw new CliUsageError(
      max === 0
        ? `takes no arguments (got ${positionals.join(' ')})`
        : `give one ${what}, got ${String(positionals.length)}: ${positionals.join(' ')}`,
    );
  }
  const stack = values.stack;
  if (stack !== undefined && (typeof stack !== 'string' || stack.trim() === '')) {
    throw new CliUsageError('--stack: give the stack name, e.g. --stack Hopper');
  }
  return {
    values,
    positionals,
    json: values.json === true,
    stack: typeof stack === 'string' ? stack : undefined,
  };
}

/** An integer flag within [min, max], or undefined when not given. */
export function integerFlag(values: Values, flag: string, min: number, max: number): number | undefined {
  const text = values[flag];
  if (typeof text !== 'string') return undefined;
  const value = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new CliUsageError(`--${flag}: expected an integer ${String(min)}..${String(max)}, got "${text}"`);
  }
  return value;
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
