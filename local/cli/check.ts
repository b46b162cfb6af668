/**
 * `hopper check <folder> [--json]`: a drop judged offline by the run's own rules, with the code
 * ValidateDrop runs (lambdas/drop/validate.ts's judgeDrop, over the folder as drop-folder.ts reads
 * it), before anything is uploaded or paid for: its files and their bytes, the credits it may
 * spend, the estimated AWS cost of its run, and what would stop it, with the run's error code and
 * message. It asks neither a bucket nor the training service: what only they can tell is said,
 * not guessed (docs/spending.md, "Check before paying").
 */
import { DROP_QUIET_MS } from '../../lambdas/drop/settle.js';
import { judgeDrop, type JudgedDrop } from '../../lambdas/drop/validate.js';
import { parseCodedMessage, RunError } from '../../lambdas/run/errors/index.js';
import { awsUsdOf, PRICES_AS_OF, PRICES_REGION, typicalRunUsage } from '../../lambdas/run/status/index.js';
import { TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { CommandError, defineCommand, EXIT, json, table, type CommandSpec } from './command.js';
import { DropFolderError, readDropFolder, type DropFolder } from './drop-folder.js';
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
    1: 'it would not: the error code and message the run would stop with are printed',
    2: true,
  },
};

/** What the run decides only once it starts, from the bucket or the service: said, not guessed. */
const AT_RUN_START = [
  `the folder is taken once nothing in it has changed for ${String(DROP_QUIET_MS / 1000)} s, train.json written last (files_still_arriving)`,
  "the service's verdicts: whether it reads the data files (dataset_unreadable), the held-out examples the labels must answer (labels_required, label_missing, label_ambiguous, invalid_label), the decisions (invalid_decision), the encoder (unknown_encoder), the account's credits (no_credits)",
];
const RESUME_AT_RUN_START = `"resume": true: the failed run to resume is found in the drop's status in the bucket (not_resumable)`;

type SentAs = 'data' | 'labels' | 'settings';

/** What `hopper check` says of a drop: its --json, and what its text shows. */
export interface CheckVerdict {
  readonly drop: string;
  /** What would stop the run, as its status would say it; null when the drop would go through. */
  readonly error: { readonly code: string; readonly message: string } | null;
  /** Every plain file of the folder: null `sent_as` when not sent (or the drop is refused). */
  readonly files: readonly {
    readonly name: string;
    readonly bytes: number;
    readonly sent_as: SentAs | null;
  }[];
  /** Bytes the run sends the service: the data files and the labels file. */
  readonly bytes: number;
  readonly credits: {
    readonly per_attempt: 1;
    readonly max_attempts: number;
    /** One per encoder of train.json "encoders"; "all": as many as the service offers. */
    readonly trainings: number | 'all';
    /** null with "all": it depends on the service's encoders. */
    readonly at_most: number | null;
  } | null;
  /** The estimated cost of a run that trains at its first attempt (lambdas/run/status/usage.ts). */
  readonly aws: {
    readonly usd: number;
    readonly usage: ReturnType<typeof typicalRunUsage>;
    readonly prices: { readonly region: string; readonly as_of: string };
  } | null;
  readonly checked_when_the_run_starts: readonly string[];
}

export const runCheckCommand = defineCommand(CHECK_SPEC, async (args, io) => {
  const folder = await readDropFolder(args.positionals[0] ?? '').catch((error: unknown) => {
    if (!(error instanceof DropFolderError)) throw error;
    const coded = parseCodedMessage(error.message);
    throw new CommandError(coded?.code ?? 'not_a_drop', coded?.text ?? error.message);
  });
  const judged = await judgeDrop(folder).catch((error: unknown) => {
    if (error instanceof RunError) return error;
    throw error;
  });
  const verdict = verdictOf(folder, judged);
  io.stdout.write(args.on('json') ? json(verdict) : describe(verdict));
  return verdict.error === null ? EXIT.succeeded : EXIT.failed;
});

export function verdictOf(folder: DropFolder, judged: JudgedDrop | RunError): CheckVerdict {
  const passed = judged instanceof RunError ? undefined : judged;
  const sentAs = new Map<string, SentAs>([
    ...(passed?.config.files ?? []).map((file): [string, SentAs] => [file.name, 'data']),
    ...(passed?.config.labels == null ? [] : [[passed.config.labels.name, 'labels'] as [string, SentAs]]),
    ...(passed === undefined ? [] : [[TRAIN_JSON, 'settings'] as [string, SentAs]]),
  ]);
  const files = [...folder.files.values()].map(({ name, bytes }) => ({
    name,
    bytes,
    sent_as: sentAs.get(name) ?? null,
  }));
  const usage = typicalRunUsage(passed?.config.files.length ?? 0);
  const prices = { region: PRICES_REGION, as_of: PRICES_AS_OF };
  return {
    drop: folder.drop,
    error: judged instanceof RunError ? { code: judged.code, message: judged.detail } : null,
    files,
    bytes: files.reduce(
      (sum, file) => sum + (file.sent_as === 'data' || file.sent_as === 'labels' ? file.bytes : 0),
      0,
    ),
    credits: passed === undefined ? null : creditsOf(passed),
    aws: passed === undefined ? null : { usd: awsUsdOf(usage).total, usage, prices },
    checked_when_the_run_starts: [
      ...AT_RUN_START,
      ...(passed?.trainJson.resume === true ? [RESUME_AT_RUN_START] : []),
    ],
  };
}

/** 1 credit per training attempt, up to maxAttempts, for each encoder train.json names. */
function creditsOf({ config, trainJson }: JudgedDrop): CheckVerdict['credits'] {
  // train.json "encoders" (a list, or "all" of the service's): one training from the dataset each.
  const { encoders } = trainJson as { readonly encoders?: readonly string[] | 'all' };
  const trainings = encoders === 'all' ? 'all' : (encoders?.length ?? 1);
  const atMost = trainings === 'all' ? null : trainings * config.maxAttempts;
  return { per_attempt: 1, max_attempts: config.maxAttempts, trainings, at_most: atMost };
}

function describe(verdict: CheckVerdict): string {
  const { error, credits, aws } = verdict;
  const rows = verdict.files.map((file) => [file.name, String(file.bytes), file.sent_as ?? '-']);
  const lines = [
    `drop "${verdict.drop}": ${error === null ? 'would go through' : `refused: ${error.code}: ${error.message}`}`,
    table(['FILE', 'BYTES', 'SENT AS'], rows).trimEnd(),
    `sent: ${formatBytes(verdict.bytes)}`,
  ];
  if (credits !== null) {
    const each = `1 per attempt, up to maxAttempts ${String(credits.max_attempts)} (a failed attempt's credit comes back)`;
    lines.push(
      credits.at_most === null
        ? `credits: ${each}, for each encoder the service offers ("encoders": "all")`
        : `credits: at most ${String(credits.at_most)}: ${each}${credits.trainings === 1 ? '' : `, for each of ${String(credits.trainings)} encoders`}`,
    );
  }
  if (aws !== null) {
    const { usage } = aws;
    lines.push(
      `estimated AWS cost: $${aws.usd.toFixed(5)} for a run that trains at its first attempt (${String(usage.lambda_invocations)} Lambda invocations, ${String(usage.lambda_gb_seconds)} GB-seconds, ${String(usage.state_transitions)} state transitions, ${String(usage.s3_requests.put)} S3 PUTs and ${String(usage.s3_requests.get)} GETs, at ${aws.prices.region} list prices of ${aws.prices.as_of})`,
    );
  }
  lines.push(
    'checked when the run starts:',
    ...verdict.checked_when_the_run_starts.map((rule) => `  - ${rule}`),
  );
  return `${lines.join('\n')}\n`;
}
