/**
 * A local drop folder, read once as the bucket lists a drop (plain files with their size and the
 * etag S3 gives a file put whole, the MD5 of its bytes; names in sub-folders), so that the run's
 * own rules judge it (lambdas/drop/validate.ts's judgeDrop) before anything is sent: the one
 * reader of a folder for `hopper check` and `hopper run`. Nothing outside the folder is ever read
 * (the service is a third party): a symbolic link is refused, and no file is opened through one.
 *
 * `hopper check <folder> [--json]` (runCheckCommand) judges it offline, with the code ValidateDrop
 * runs, before anything is uploaded or paid for: its files and their bytes, the credits it may
 * spend, the estimated AWS cost of its run, and what would stop it, with the run's error code and
 * message. It asks neither a bucket nor the training service: what only they can tell is said,
 * not guessed (docs/spending.md, "Check before paying"). `hopper run` uploads a folder the rules
 * let through under inbox/<folder name>/, train.json last, since its arrival starts the run.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readdir, readlink, stat, type FileHandle } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listingOf } from '../../lambdas/drop/listing.js';
import type { DropFile } from '../../lambdas/run/state/index.js';
import { listForMessage, quoted } from '../../lambdas/drop/user-text.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { DROP_QUIET_MS } from '../../lambdas/drop/settle.js';
import { judgeDrop, type DropSource, type JudgedDrop } from '../../lambdas/drop/validate.js';
import { codedMessage, RunError } from '../../lambdas/run/errors/index.js';
import { awsUsdOf, PRICES_AS_OF, PRICES_REGION, typicalRunUsage } from '../../lambdas/run/status/index.js';
import { CommandError, defineCommand, EXIT, json, table, type CommandSpec } from './command.js';
import { formatBytes } from './progress.js';

/**
 * A folder refused before anything is sent (exit 1, as a run that fails): its `code` (not_a_drop,
 * linked_files, or the run's own), said in the text too, and a message saying why and what to do.
 */
export class DropFolderError extends CommandError {
  override readonly name: string = 'DropFolderError';

  constructor(message: string, code = 'not_a_drop') {
    super(code, message);
  }

  override get text(): string {
    return codedMessage(this.code, this.message);
  }
}

/** The run's rules refusing a folder, as hopper check and hopper run report it. */
export function refusedFolder(error: unknown): never {
  throw error instanceof RunError ? new DropFolderError(error.detail, error.code) : error;
}

/** A local folder as a drop: what the rules read, and where its files are. */
export interface DropFolder extends DropSource {
  /** The folder's absolute path. */
  readonly root: string;
}

/** Files uploaded at once. */
const UPLOAD_CONCURRENCY = 4;
/** Files up to this size are read whole for their etag. */
const READ_WHOLE_BYTES = 8 * 1024 * 1024;

/**
 * Lists the folder as the bucket would list its drop, each plain file read once for its etag.
 * @throws DropFolderError naming what is wrong and how to fix it
 */
export async function readDropFolder(folder: string): Promise<DropFolder> {
  const root = resolve(folder);
  const info = await stat(root).catch(() => null);
  if (info === null) throw new DropFolderError(`${folder}: no such folder`);
  if (!info.isDirectory()) {
    throw new DropFolderError(`${folder} is a file; give the folder that holds the data and train.json`);
  }
  const found: DropFile[] = [];
  const links: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const name = relative(root, path).split(sep).join('/');
    if (entry.isSymbolicLink()) links.push(`${quoted(name)} -> ${quoted(await readlink(path))}`);
    // A file in a sub-folder is only named (the rules refuse it): not read.
    else if (entry.isFile())
      found.push({ name, ...(name.includes('/') ? { bytes: 0, etag: '' } : await digestOf(path)) });
  }
  if (links.length > 0) {
    throw new DropFolderError(
      `${folder} holds symbolic links: ${listForMessage(links.sort(), String)}. Hopper sends only the files inside the drop folder and follows no link out of it: replace each link by a copy of what it points to, or move it out of the folder`,
      'linked_files',
    );
  }
  const listing = listingOf(found);
  checkDropFiles(folder, [...listing.files.keys()]);
  const read = async (name: string) => (await openInside(join(root, name))).createReadStream();
  return {
    root,
    drop: basename(root),
    ...listing,
    trainJson: () => read(TRAIN_JSON),
    open: (file) => read(file.name),
  };
}

/**
 * What makes a folder no drop at all, whoever sends it (`hopper run`, the console's page):
 * `names` are its files relative to it, with `/` separators.
 */
export function checkDropFiles(folder: string, names: readonly string[]): void {
  if (!names.includes(TRAIN_JSON)) {
    throw new DropFolderError(
      `${folder} has no ${TRAIN_JSON}, which starts a run: add one ({} is valid, see docs/drop-format.md)`,
    );
  }
}

/** O_NOFOLLOW: a file made a link since the folder was read is not followed either. */
function openInside(path: string): Promise<FileHandle> {
  return open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
}

/** A file's size and the etag S3 gives it put whole: the MD5 of its bytes, in hex. */
async function digestOf(path: string): Promise<{ bytes: number; etag: string }> {
  const file = await openInside(path);
  try {
    const hash = createHash('md5');
    const { size } = await file.stat();
    // A small file in one read (a stream costs twice the time a file); a large one streamed.
    if (size <= READ_WHOLE_BYTES) hash.update(await file.readFile());
    else for await (const chunk of file.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return { bytes: size, etag: hash.digest('hex') };
  } finally {
    await file.close();
  }
}

/**
 * Uploads the folder's plain files but those `leftOut` (judgeDrop's) to `bucket` and resolves to
 * train.json's etag, which names the run (lambdas/trigger/start-execution.ts). train.json goes up
 * only once every other file is there.
 */
export async function uploadDropFolder(
  s3: S3Client,
  bucket: string,
  folder: DropFolder,
  leftOut: readonly string[] = [],
): Promise<string> {
  const queue = [...folder.files.values()].filter(
    (file) => file.name !== TRAIN_JSON && !leftOut.includes(file.name),
  );
  const worker = async (): Promise<void> => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      await putFile(s3, bucket, folder, file);
    }
  };
  await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker));
  const trainJson = folder.files.get(TRAIN_JSON);
  if (trainJson === undefined) throw new DropFolderError(`${folder.root} has no ${TRAIN_JSON}`);
  return putFile(s3, bucket, folder, trainJson);
}

async function putFile(s3: S3Client, bucket: string, folder: DropFolder, file: DropFile): Promise<string> {
  // Opened first: a file that is gone or unreadable rejects here, not in a stream mid-request.
  const handle = await openInside(join(folder.root, file.name));
  try {
    const answer = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: inboxKey(folder.drop, file.name),
        Body: handle.createReadStream(),
        ContentLength: file.bytes,
      }),
    );
    if (answer.ETag === undefined) throw new Error(`S3 returned no ETag for ${file.name}`);
    return answer.ETag;
  } finally {
    await handle.close();
  }
}

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
const RESUME_AT_RUN_START = `"resume": true: the failed run to resume is found in the drop's status in the bucket (not_resumable)`;

/** What `hopper check` says of a drop: its --json, and what its text shows. */
export type CheckVerdict = ReturnType<typeof verdictOf>;

export const runCheckCommand = defineCommand(CHECK_SPEC, async (args, io) => {
  const folder = await readDropFolder(args.positionals[0] ?? '');
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
 * that trains at its first attempt (lambdas/run/status/usage.ts), or what would stop the run.
 */
export function verdictOf(folder: DropFolder, judged: JudgedDrop | RunError) {
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
function creditsOf({ config, trainJson }: JudgedDrop) {
  const { encoders } = trainJson;
  const trainings = encoders === 'all' ? 'all' : (encoders?.length ?? 1);
  const atMost = trainings === 'all' ? null : trainings * config.maxAttempts;
  return { per_attempt: 1, max_attempts: config.maxAttempts, trainings, at_most: atMost };
}

/** Files left out of the default file list, and why, as `hopper check` and `hopper run` say it. */
export function leftOutText(names: readonly string[]): string {
  return `${listForMessage(names)} (files operating systems leave in folders; name them in train.json "files" to send them)`;
}

function describe(verdict: CheckVerdict): string {
  const { error, credits, aws } = verdict;
  const rows = verdict.files.map((file) => [file.name, String(file.bytes), file.sent_as ?? '-']);
  const lines = [
    `drop "${verdict.drop}": ${error === null ? 'would go through' : `refused: ${error.code}: ${error.message}`}`,
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
