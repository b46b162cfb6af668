/**
 * `hopper check <folder> [--json]`: judges a drop folder offline, with the code ValidateDrop runs
 * (lambdas/drop/validate.ts's judgeDrop) on the folder as drop-folder.ts reads it, before anything
 * is uploaded or paid for: its files and their bytes, the credits it may spend, the estimated AWS
 * cost of its run, and what would stop it, with the run's error code and message. It asks neither
 * a bucket nor the training service: what only they can tell is said, not guessed
 * (docs/spending.md, "Check before paying").
 */
import { DROP_QUIET_MS } from '../../lambdas/drop/settle.js';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { judgeDrop, type JudgedDrop } from '../../lambdas/drop/validate.js';
import { RunError, type RunErrorCode } from '../../lambdas/core/errors/index.js';
import {
  awsUsdOf,
  PRICES_AS_OF,
  PRICES_REGION,
  typicalRunUsage,
  type AwsUsage,
  type RunSummary,
} from '../../lambdas/records/status/index.js';
import { defineCommand, EXIT, json, table, type CommandSpec } from './command.js';
import { leftOutText, readDropFolder, type DropFolder } from './drop-folder.js';
import { formatBytes } from './progress.js';

export const CHECK_SPEC: CommandSpec = {
  name: 'check',
  usage: '<folder> [--json]',
  about:
    "Judges a drop folder offline with the run's own rules (ValidateDrop's code), before anything is uploaded or paid for: its files and their bytes, the credits it may spend, the estimated AWS cost of its run, and anything that will stop it, with the run's error code and message. It asks neither a bucket nor the training service, and says what only they decide.",
  flags: { json: { help: 'print the verdict as one JSON object' } },
  positionals: { min: 1, max: 1, what: 'folder to check', hint: 'hopper check examples/reviews' },
  exits: {
    0: 'the drop would go through',
    1: 'it would not, or the folder is no drop: the error code and message are printed (hopper run exits 1 on it too)',
    2: true,
  },
};

/** What the run decides only once it starts, from the bucket or the service: said, not guessed. */
const AT_RUN_START = [
  `the folder is taken once nothing in it has changed for ${String(DROP_QUIET_MS / 1000)} s, train.json written last (files_still_arriving)`,
  "the service's verdicts: whether it reads the data files (dataset_unreadable), the held-out examples the labels must answer (labels_required, label_missing, label_ambiguous, invalid_label), the decisions (invalid_decision), the encoder (unknown_encoder), the account's credits (no_credits)",
  "the credit budget, when one is set: room for a training's credit when it starts (credit_budget)",
];
const NO_LABELS = {
  code: 'labels_required',
  message:
    'the service holds out examples to label: the drop has no labels file, so add labels.csv with their answers (docs/drop-format.md)',
} as const satisfies CheckVerdict['unless'];
const RESUME_AT_RUN_START = `"resume": true: the failed run to resume is found in the drop's status in the bucket (not_resumable)`;

/** What `hopper check` says of a drop: its --json, and what its text shows. */
export interface CheckVerdict {
  readonly drop: string;
  /** What would stop the run, with the run's own code and message; null: the drop would go through. */
  readonly error: { readonly code: RunErrorCode; readonly message: string } | null;
  /**
   * What would still stop a drop that goes through, from what it lacks, should the service ask
   * for it: a drop without a labels file stops with labels_required when its dataset holds out
   * examples to label. Null when nothing is (or the drop is refused).
   */
  readonly unless: { readonly code: RunErrorCode; readonly message: string } | null;
  /** Every plain file of the folder, and what the run sends it as (null: not sent, or refused). */
  readonly files: readonly { name: string; bytes: number; sent_as: 'data' | 'labels' | 'settings' | null }[];
  readonly left_out: readonly string[];
  /** The bytes of the data and labels files sent. */
  readonly bytes: number;
  readonly credits: DropCredits | null;
  /** The estimated AWS cost of a run that trains at its first attempt. */
  readonly aws: {
    usd: RunSummary['aws_usd'];
    usage: AwsUsage;
    prices: { region: string; as_of: string };
  } | null;
  readonly checked_when_the_run_starts: readonly string[];
}

/** The credits a drop may spend: 1 per attempt, up to max_attempts, for each training. */
interface DropCredits {
  readonly per_attempt: number;
  readonly max_attempts: number;
  /** Trainings from the dataset: train.json's encoders, or 'all' the service offers. */
  readonly trainings: number | 'all';
  /** null with "encoders": "all": how many the service offers is not known here. */
  readonly at_most: number | null;
}

export const runCheckCommand = defineCommand(CHECK_SPEC, async (args, io) => {
  const folder = await readDropFolder(args.positionals[0] ?? '', 'check');
  const verdict = verdictOf(folder, await judgeDrop(folder).catch(refusal));
  io.stdout.write(args.on('json') ? json(verdict) : describe(verdict));
  return verdict.error === null ? EXIT.succeeded : EXIT.failed;
});

/** The error the rules refused the drop with (any other is a failure of the command). */
function refusal(error: unknown): RunError {
  if (error instanceof RunError) return error;
  throw error;
}

/**
 * Every plain file of the folder, with what the run sends it as (null: not sent, or the drop is
 * refused), the bytes sent, the credits the drop may spend and the estimated AWS cost of a run
 * that trains at its first attempt (lambdas/records/status/usage.ts), or what would stop the run.
 */
export function verdictOf(folder: DropFolder, judged: JudgedDrop | RunError): CheckVerdict {
  const passed = judged instanceof RunError ? undefined : judged;
  const data = new Set(passed?.config.files.map((file) => file.name));
  const sentAs = (name: string): 'data' | 'labels' | 'settings' | null => {
    if (passed === undefined) return null;
    if (name === TRAIN_JSON) return 'settings';
    return name === passed.config.labels?.name ? 'labels' : data.has(name) ? 'data' : null;
  };
  const files = [...folder.files.values()].map(({ name, bytes }) => ({ name, bytes, sent_as: sentAs(name) }));
  const sent = files.filter((file) => file.sent_as === 'data' || file.sent_as === 'labels');
  const usage = typicalRunUsage(data.size);
  const prices = { region: PRICES_REGION, as_of: PRICES_AS_OF };
  const resume = passed?.trainJson.resume === true ? [RESUME_AT_RUN_START] : [];
  return {
    drop: folder.drop,
    error: judged instanceof RunError ? { code: judged.code, message: judged.detail } : null,
    unless: passed === undefined || passed.config.labels !== null ? null : NO_LABELS,
    files,
    left_out: passed?.leftOut ?? [],
    bytes: sent.reduce((sum, file) => sum + file.bytes, 0),
    credits: passed === undefined ? null : creditsOf(passed),
    aws: passed === undefined ? null : { usd: awsUsdOf(usage), usage, prices },
    checked_when_the_run_starts: [...AT_RUN_START, ...resume],
  };
}

/**
 * 1 credit per training attempt, up to maxAttempts, for each encoder of train.json "encoders"
 * (one training each from the dataset); with "all", as many as the service offers: not known here.
 */
function creditsOf({ config, trainJson }: JudgedDrop): DropCredits {
  const { encoders } = trainJson;
  const trainings = encoders === 'all' ? 'all' : (encoders?.length ?? 1);
  const atMost = trainings === 'all' ? null : trainings * config.maxAttempts;
  return { per_attempt: 1, max_attempts: config.maxAttempts, trainings, at_most: atMost };
}

function headline({ error, unless }: CheckVerdict): string {
  if (error !== null) return `refused: ${error.code}: ${error.message}`;
  return unless === null ? 'would go through' : `would go through, unless ${unless.message} (${unless.code})`;
}

function describe(verdict: CheckVerdict): string {
  const { credits, aws } = verdict;
  const rows = verdict.files.map((file) => [file.name, String(file.bytes), file.sent_as ?? '-']);
  const lines = [
    `drop "${verdict.drop}": ${headline(verdict)}`,
    table(['FILE', 'BYTES', 'SENT AS'], rows).trimEnd(),
    `sent: ${formatBytes(verdict.bytes)}`,
  ];
  if (verdict.left_out.length > 0) lines.push(`left out: ${leftOutText(verdict.left_out)}`);
  if (credits !== null) {
    // What the run keeps, then what it may take on the way: a failed training's credit comes back.
    const each = `1 per training started (maxAttempts ${String(credits.max_attempts)}), a failed one's given back`;
    const kept =
      credits.trainings === 1
        ? '1 kept if a training succeeds'
        : `1 kept per encoder whose training succeeds (${String(credits.trainings)} encoders)`;
    lines.push(
      credits.at_most === null
        ? `credits: 1 kept per encoder whose training succeeds, for each encoder the service offers ("encoders": "all"); ${each}`
        : `credits: ${kept}; up to ${String(credits.at_most)} taken on the way, ${each}`,
    );
  }
  if (aws !== null) {
    const { usage, prices } = aws;
    lines.push(
      `estimated AWS cost: $${aws.usd.total.toFixed(5)} for a run that trains at its first attempt (${String(usage.lambda_invocations)} Lambda invocations, ${String(usage.lambda_gb_seconds)} GB-seconds, ${String(usage.state_transitions)} state transitions, ${String(usage.s3_requests.put)} S3 PUTs and ${String(usage.s3_requests.get)} GETs, at ${prices.region} list prices of ${prices.as_of})`,
    );
  }
  const atStart = verdict.checked_when_the_run_starts.map((rule) => `  - ${rule}`);
  lines.push('checked when the run starts:', ...atStart);
  return `${lines.join('\n')}\n`;
}
