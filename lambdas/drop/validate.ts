/**
 * validate_drop's work: from the drop folder and its train.json to the run's configuration
 * (RunConfig), every default of docs/drop-format.md applied and every file pinned by size and
 * etag, so later steps send exactly what was checked here.
 *
 * The rules (judgeDrop) read a drop through a DropSource, so that one code judges it wherever it
 * is: the bucket (validateDrop: the folder once it has stopped changing, settle.ts, and files
 * read at their listed version), a local folder (`hopper check` and `hopper run`,
 * local/cli/drop-folder.ts) or the names and sizes the console's page sends
 * (local/console/uploads.ts). Checks, in order, each failing with a code of its own and a message
 * naming the files: train.json (the version that started the run, valid), no objects in
 * sub-folders, a drop name whose keys S3 takes, the files train.json names exist, there is data
 * to send (by default every file but those operating systems leave), no data file is empty or
 * other than UTF-8 text, the labels file (read whole: UTF-8, CSV, its header, a row, no id given
 * two labels). Which earlier run a drop resumes or adopts is not decided here but by the step,
 * through the drop's owner (lambdas/ownership/).
 */
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { RunError } from '../core/errors/errors.js';
import {
  nestedFilesMessage,
  noDataFilesMessage,
  tooManyFilesMessage,
  emptyFilesMessage,
  fileListTooLongMessage,
  trainJsonTooLargeForRunMessage,
  trainJsonTooLargeMessage,
  invalidFileNamesMessage,
  namedFilesMissingMessage,
  lostTrackMessage,
  nameTooLongMessage,
} from '../core/errors/messages.js';
import type { DropPlace } from '../core/errors/messages.js';
import { MAX_DATASET_NAME_LENGTH } from '../service-client/contract.js';
import type { DropFile, RunConfig, RunInput } from '../core/state/state.js';
import { DEFAULT_LABELS_FILE, inboxPrefix, MAX_DROP_NAME_BYTES, TRAIN_JSON } from '../storage/keys.js';
import { fileNameProblem, isLeftBySystem, PLAIN_FILE_NAME_RULE } from './file-names.js';
import { checkedUtf8, listForMessage, printable, quoted } from './user-text.js';
import { openDropFile, openInboxFile } from './labels-csv.js';
import { checkLabelsFile } from './labels.js';
import type { DropListing } from './listing.js';
import { settledListing, type SettleClock } from './settle.js';
import {
  DEFAULT_DECISIONS,
  DEFAULT_MAX_ATTEMPTS,
  MAX_FILES,
  MAX_TRAIN_JSON_BYTES,
  parseTrainJson,
  type TrainJson,
} from './train-json.js';

/** How validate_drop waits for a drop to stop changing (settle.ts). */
export interface SettleOptions {
  readonly quietMs: number;
  readonly clock: SettleClock;
}

/** What the rules read a drop through: its listing, and its files' bytes. */
export interface DropSource extends Pick<DropListing, 'files' | 'nested'> {
  /** The drop's name: the `<drop>` of inbox/<drop>/. */
  readonly drop: string;
  /** train.json's bytes, as the run reads them (in the bucket: the version that started it). */
  trainJson(): Promise<Readable>;
  /**
   * A listed file's bytes at the listed version; absent where only names and sizes are known
   * (the console's page): the rules that read a file are then left to the run.
   */
  readonly open?: (file: DropFile) => Promise<Readable>;
  /** The most bytes of data files read for the UTF-8 check (default: all of them). */
  readonly textCheckBytes?: number;
  /** Where the user keeps the drop, for the words of a refusal (default: the bucket's). */
  readonly place?: DropPlace;
}

/** The bucket's place of a drop: its folder under inbox/, sent again by uploading train.json. */
export function bucketPlace(drop: string): DropPlace {
  return { folder: printable(inboxPrefix(drop)), sendAgain: 'upload train.json again' };
}

/**
 * What validate_drop reads of the data files for the UTF-8 check: at ~50 MB/s (S3 and the CPU of
 * a 256 MB Lambda) a few seconds, well within the minute the folder's settling leaves.
 */
export const MAX_TEXT_CHECK_BYTES = 256 * 1024 * 1024;

/** A drop the rules let through: the run's configuration but for `resumeFrom`, and its train.json. */
export interface JudgedDrop {
  readonly config: RunConfig;
  readonly trainJson: TrainJson;
  /** Files left out of the default file list (operating systems' files), by name. */
  readonly leftOut: string[];
}

/** The drop in the bucket, judged once its folder has stopped changing. */
export async function validateDrop(s3: S3Client, run: RunInput, settle: SettleOptions): Promise<JudgedDrop> {
  return judgeDrop({
    drop: run.drop,
    ...(await settledListing(s3, run, settle.quietMs, settle.clock)),
    // At the version that started the run (If-Match its etag): a newer copy has its own run,
    // and this one must not run on the newer settings.
    trainJson: () =>
      openDropFile(s3, run, (changed) =>
        changed
          ? 'train.json changed after this run started; the newer copy starts its own run'
          : 'train.json was deleted after this run started; upload it again to start a run',
      ),
    open: (file) => openInboxFile(s3, run.bucket, run.drop, file),
    textCheckBytes: MAX_TEXT_CHECK_BYTES,
  });
}

/**
 * Every rule of validate_drop that the drop alone decides.
 * @throws RunError with the code and message the run fails with
 */
export async function judgeDrop(source: DropSource): Promise<JudgedDrop> {
  const place = source.place ?? bucketPlace(source.drop);
  const { folder } = place;
  const trainJson = parseTrainJson(await readTrainJson(source));

  if (source.nested.length > 0) {
    throw new RunError('nested_files', nestedFilesMessage(place, listForMessage(source.nested)));
  }

  checkDropName(source.drop);
  const labelsName = labelsFileName(trainJson, source);
  const dataNames = dataFileNames(trainJson, source, labelsName);
  checkPresent(trainJson, source, place);
  checkNames(dataNames, folder);
  if (dataNames.length === 0) {
    const present = listForMessage([...source.files.keys()]);
    throw new RunError('no_data_files', noDataFilesMessage(place, present));
  }
  if (dataNames.length > MAX_FILES) {
    throw new RunError('too_many_files', tooManyFilesMessage(folder, dataNames.length, MAX_FILES));
  }

  const files = dataNames.map((name) => pinned(source, name));
  const empty = files.filter((file) => file.bytes === 0).map((file) => file.name);
  if (empty.length > 0) throw new RunError('empty_file', emptyFilesMessage(folder, listForMessage(empty)));

  await checkText(files, source);
  const labels = labelsName === undefined ? null : pinned(source, labelsName);
  if (labels !== null) await checkLabelsFile(labels, source.open);

  const config: RunConfig = {
    name: trainJson.name ?? defaultName(source.drop),
    files,
    labels,
    encoder: trainJson.encoder ?? null,
    decisions: trainJson.decisions ?? DEFAULT_DECISIONS,
    maxAttempts: trainJson.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    ...(trainJson.encoders === undefined ? {} : { encoders: trainJson.encoders }),
    ...(trainJson.promote === undefined ? {} : { promote: trainJson.promote }),
  };
  checkStateSize(config, folder);
  return { config, trainJson, leftOut: leftOutNames(trainJson, source, labelsName) };
}

/**
 * The most of a state's bytes $.config may take. Step Functions caps a state at 256 KiB and
 * fails an execution that exceeds it with States.DataLimitExceeded, which no Catch can take (so
 * the run would end without a report); the rest of the state (slots, a caught failure's Cause)
 * needs the remaining quarter.
 */
export const MAX_CONFIG_BYTES = 192 * 1024;

/**
 * @throws RunError when the configuration would not fit in the run's state: too_many_files when
 *   the file list takes most of it, invalid_train_json when train.json's own values do
 */
function checkStateSize(config: RunConfig, folder: string): void {
  const bytes = Buffer.byteLength(JSON.stringify(config));
  if (bytes <= MAX_CONFIG_BYTES) return;
  const kib = { list: Math.ceil(bytes / 1024), max: MAX_CONFIG_BYTES / 1024 };
  const { files: _files, labels: _labels, ...settings } = config;
  const settingsBytes = Buffer.byteLength(JSON.stringify(settings));
  if (settingsBytes > bytes - settingsBytes)
    throw new RunError(
      'invalid_train_json',
      trainJsonTooLargeForRunMessage({ config: bytes, max: MAX_CONFIG_BYTES }),
    );
  throw new RunError('too_many_files', fileListTooLongMessage(folder, config.files.length, kib));
}

/**
 * Every data file is UTF-8 text, read smallest first up to `source.textCheckBytes` in all (what
 * is past it is left to the service).
 * @throws RunError dataset_unreadable naming the file and its first byte that is not UTF-8
 */
async function checkText(files: readonly DropFile[], { open, textCheckBytes = Infinity }: DropSource) {
  if (open === undefined) return;
  let left = textCheckBytes;
  for (const file of [...files].sort((a, b) => a.bytes - b.bytes)) {
    left -= file.bytes;
    if (left < 0) return;
    const body = await open(file);
    try {
      const chunks = checkedUtf8(body as AsyncIterable<Buffer>, file.name, 'dataset_unreadable');
      for await (const _chunk of chunks) {
        // Checked as it streams: nothing of it is kept.
      }
    } finally {
      body.destroy();
    }
  }
}

/** train.json's text, refused unread when it is far larger than a train.json. */
async function readTrainJson(source: DropSource): Promise<Buffer> {
  const listed = source.files.get(TRAIN_JSON);
  if (listed !== undefined && listed.bytes > MAX_TRAIN_JSON_BYTES) {
    throw new RunError('invalid_train_json', trainJsonTooLargeMessage(MAX_TRAIN_JSON_BYTES, listed.bytes));
  }
  const body = await source.trainJson();
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_TRAIN_JSON_BYTES) {
      body.destroy();
      throw new RunError('invalid_train_json', trainJsonTooLargeMessage(MAX_TRAIN_JSON_BYTES));
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** train.json's `labels`; else labels.csv when the folder has it and `files` does not claim it. */
function labelsFileName(trainJson: TrainJson, source: DropSource): string | undefined {
  if (trainJson.labels !== undefined) return trainJson.labels;
  const claimedAsData = trainJson.files?.includes(DEFAULT_LABELS_FILE) === true;
  return source.files.has(DEFAULT_LABELS_FILE) && !claimedAsData ? DEFAULT_LABELS_FILE : undefined;
}

/** train.json's `files`; else every object of the folder but train.json, the labels file and the system's. */
function dataFileNames(trainJson: TrainJson, source: DropSource, labelsName: string | undefined): string[] {
  if (trainJson.files !== undefined) return [...trainJson.files];
  return [...source.files.keys()].filter(
    (name) => name !== TRAIN_JSON && name !== labelsName && !isLeftBySystem(name),
  );
}

/** The files operating systems leave that the default file list left out. */
function leftOutNames(trainJson: TrainJson, source: DropSource, labelsName: string | undefined): string[] {
  if (trainJson.files !== undefined) return [];
  return [...source.files.keys()].filter((name) => name !== labelsName && isLeftBySystem(name));
}

/**
 * A drop's name is short enough for its keys: a folder on disk never is this long (a file name
 * takes 255 bytes), but a folder in S3 may be.
 * @throws RunError name_too_long
 */
function checkDropName(drop: string): void {
  const bytes = Buffer.byteLength(drop);
  if (bytes <= MAX_DROP_NAME_BYTES) return;
  throw new RunError('name_too_long', nameTooLongMessage(quoted(drop), bytes, MAX_DROP_NAME_BYTES));
}

/**
 * Every data file has a name the service takes (train.json's own `files` were checked with it;
 * this catches objects of the folder sent by default), so the run does not fail later at
 * CreateDataset with the service's less specific refusal.
 */
function checkNames(names: readonly string[], folder: string): void {
  const refused = names.filter((name) => fileNameProblem(name) !== undefined);
  if (refused.length === 0) return;
  const named = listForMessage(refused, (name) => `${quoted(name)} (${fileNameProblem(name) ?? ''})`);
  throw new RunError('invalid_file_name', invalidFileNamesMessage(folder, named, PLAIN_FILE_NAME_RULE));
}

/** Every file train.json names (in `files` or `labels`) is in the folder. */
function checkPresent(trainJson: TrainJson, source: DropSource, place: DropPlace): void {
  const missingData = (trainJson.files ?? []).filter((name) => !source.files.has(name));
  const missingLabels = trainJson.labels !== undefined && !source.files.has(trainJson.labels);
  if (missingData.length === 0 && !missingLabels) return;
  const problems = [
    ...(missingData.length === 0 ? [] : [`"files" names ${listForMessage(missingData)}`]),
    ...(missingLabels ? [`"labels" names ${quoted(trainJson.labels)}`] : []),
  ];
  throw new RunError('missing_file', namedFilesMissingMessage(place, problems));
}

function pinned(source: DropSource, name: string): DropFile {
  const file = source.files.get(name);
  // Callers ask only for names checkPresent or the listing itself vouched for.
  if (file === undefined) throw new RunError('internal_error', lostTrackMessage(name));
  return file;
}

/** The folder's name, cut to the service's limit (in UTF-16 units), never inside a character. */
export function defaultName(drop: string): string {
  return drop.slice(0, MAX_DATASET_NAME_LENGTH).replace(/[\uD800-\uDBFF]$/, '');
}
