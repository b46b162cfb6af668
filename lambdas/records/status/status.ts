/**
 * status/<drop>.json: the live state of a drop's latest run, rewritten after every step so a
 * person (or `hopper run`) can see where the run stands and, when it fails, why and what to do.
 * Field names follow the service's snake_case, since `step` and `next_action` are its words.
 *
 * Three words a reader must tell apart (docs/drop-format.md, "Reading status.json"): `state` is
 * the run's (running, succeeded, failed, interrupted), `hopper_step` is Hopper's step that wrote
 * the file (validate_drop ... report), `step` and `next_action` are the service's.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { runRecordsPrefix, STATUS_PREFIX, statusKey } from '../../storage/keys.js';
import { objectsUnder, readJson, updateJsonConditionally } from '../../storage/objects.js';
import { runDatasetName, type NextAction } from '../../service-client/contract.js';
import { contendedWrite } from '../../core/errors/errors.js';
import { paidModelOf } from '../../core/state/paid-model.js';
import { trainingIntentOf, type TrainingIntent } from '../../core/state/training-intent.js';
import {
  configFingerprint,
  copiedModel,
  copyWaitOf,
  type CopySlot,
  type CopyWaitSlot,
  type EncoderOutcome,
  type RunFailure,
  type RunInput,
  type RunState,
} from '../../core/state/state.js';
import { encoderOutcomes } from '../../core/state/sweep.js';
import { isLaterRun } from '../../core/state/run-order.js';
import type { RunSummary } from './usage.js';
import type { RunPhase, StepName } from '../../core/state/vocabulary.js';

export type { RunPhase };

/** What `superseded_runs` keeps of an older run's status (supersededEntry). */
const SUPERSEDED_FIELDS = [
  'run_id',
  'started_at',
  'sequencer',
  'state',
  'hopper_step',
  'next_action',
  'dataset_id',
  'dataset_name',
  'model_id',
  'paid_model',
  'training_intent',
  'config_fingerprint',
  'resumed_from',
  'model',
  'error',
  'updated_at',
  'summary',
] as const;
type SupersededField = (typeof SUPERSEDED_FIELDS)[number];

/**
 * An older run of the drop, as it last wrote its status after a newer run took the file: where it
 * stopped, or that its training (which held a credit) went on, and what it cost. `summary` is the
 * run's own usage summary, which its next invocation carries on from; `credits` what its trainings
 * hold (a failed training's came back).
 */
export type SupersededRun = Pick<RunStatus, SupersededField> & { readonly credits: number };

export interface RunStatus {
  readonly run_id: string;
  readonly drop: string;
  /** The run's state (docs/drop-format.md's word): running, succeeded, failed, or interrupted (local mode). */
  readonly state: RunPhase;
  /** Hopper's step that wrote this status (`upload_files`, ...). */
  readonly hopper_step: StepName;
  /** The service's step and next_action for the record the run is at (model once there is one). */
  readonly step: number | null;
  readonly next_action: NextAction | null;
  readonly dataset_id: string | null;
  /**
   * The name of the dataset the run creates at the service (runDatasetName: the user's name and
   * the run's tag), from validate_drop on: written before create_dataset asks for it, so a run
   * whose creation answer was lost (a kill, a restart) is found again at the service by it.
   * Absent in files older than the field.
   */
  readonly dataset_name?: string | null;
  readonly model_id: string | null;
  readonly attempts: number;
  readonly max_attempts: number | null;
  readonly labelled: number;
  /** The data files the run sends and its labels file, once validate_drop has taken the drop. */
  readonly files: readonly string[] | null;
  readonly labels: string | null;
  readonly started_at: string;
  /** S3's `sequencer` of the run's train.json event, which orders the drop's runs (run-order.ts). */
  readonly sequencer?: string | null;
  readonly updated_at: string;
  readonly finished_at: string | null;
  readonly error: RunFailure | null;
  /** Where the model was copied, once it is. */
  readonly model: { readonly onnx: string; readonly record: string; readonly bytes: number } | null;
  /**
   * The run's training that holds a credit and is not copied yet (queued, training, or done with
   * its files at the service), or null (lambdas/core/state/paid-model.ts, paidModelOf). A run that ends
   * with one leaves it to `hopper retry`, which adopts it without a second credit.
   */
  readonly paid_model: { readonly id: string; readonly status: string } | null;
  /**
   * The training start_training is about to start, written by the status write before it
   * (lambdas/core/state/training-intent.ts): a run whose answer to that start was lost is found
   * again through the dataset's models. Null when the run is not about to train; absent in files
   * older than the field.
   */
  readonly training_intent?: TrainingIntent | null;
  /** The digest of the run's settings (configFingerprint), once validate_drop has taken the drop. */
  readonly config_fingerprint: string | null;
  /**
   * The earlier run whose dataset (and paid model) this run took over: a resume (`hopper retry`,
   * `"resume": true`) or the same settings adopting that run's work; null for a run of its own.
   * That run is no longer resumed by anyone else (ownership/resume.ts). Absent in files older than the field.
   */
  readonly resumed_from?: string | null;
  /**
   * What the run has used and cost so far (lambdas/records/status/usage.ts), including the invocation that
   * wrote this status; null until a step has recorded one.
   */
  readonly summary: RunSummary | null;
  /**
   * While the dataset is ready to train but another run of the drop holds the drop's training
   * (one credit at a time): that run and its model.
   */
  readonly waiting_for: { readonly run_id: string; readonly model_id: string | null } | null;
  /**
   * While the copy of a paid model is put off (it failed for a reason that may pass): since when
   * copies fail, why the last one did, when the next is tried and the time the model's files
   * could be gone by.
   */
  readonly copy_put_off: {
    readonly failing_since: string;
    readonly reason: string;
    readonly next_try_at: string;
    readonly files_deadline: string;
  } | null;
  /**
   * Older runs of the drop, newest first (at most MAX_SUPERSEDED_RUNS): the run this one took the
   * file from, and older ones still going or holding a paid model when a newer train.json took
   * over. Absent only until the status is merged with the drop's file (mergeStatus).
   */
  readonly superseded_runs?: readonly SupersededRun[];
  /** In a sweep (train.json `encoders`): every encoder's outcome so far. */
  readonly encoders?: readonly EncoderOutcome[];
  /** Once the report ran, for a run that copied a model: whether it became the drop's current model. */
  readonly promotion?: Promotion;
}

/**
 * Whether the run's (best) copied model became the drop's current model, and why
 * (lambdas/steps/lineage.ts): the status file's and the run's end event's `promotion`.
 */
export interface Promotion {
  /** The model compared: the run's best copied model. */
  readonly model_id: string;
  readonly promoted: boolean;
  readonly reason: string;
  /** The drop's current model it was compared with, and its metrics minus that model's. */
  readonly previous_model_id: string | null;
  readonly differences: Readonly<Record<string, number>> | null;
}

/** Entries of `superseded_runs` kept: the newest ones. */
export const MAX_SUPERSEDED_RUNS = 10;

export interface StatusUpdate {
  /** The step writing the status. */
  readonly hopperStep: StepName;
  readonly state?: RunPhase;
  readonly error?: RunFailure | null;
  readonly summary?: RunSummary | null;
  readonly promotion?: Promotion;
}

/** The status document for a state, as of `now`. */
export function statusOf(state: RunState, update: StatusUpdate, now: number): RunStatus {
  const { run, dataset, model, copy, config } = state;
  const record = model ?? dataset;
  const phase = update.state ?? 'running';
  const paid = paidModelOf(state, update.error?.code);
  const timestamp = new Date(now).toISOString();
  return {
    run_id: run.runId,
    drop: run.drop,
    state: phase,
    hopper_step: update.hopperStep,
    step: record?.step ?? null,
    next_action: record?.nextAction ?? null,
    dataset_id: dataset?.id ?? null,
    dataset_name: config === undefined ? null : runDatasetName(config.name, run.runId),
    model_id: model?.id ?? null,
    attempts: model?.attempts ?? 0,
    max_attempts: config?.maxAttempts ?? null,
    labelled: dataset?.labelled ?? 0,
    files: config?.files.map((file) => file.name) ?? null,
    labels: config?.labels?.name ?? null,
    started_at: run.startedAt,
    sequencer: run.sequencer ?? null,
    updated_at: timestamp,
    finished_at: phase === 'running' ? null : timestamp,
    error: update.error ?? null,
    model: modelLocation(run, copy),
    paid_model: paid === null ? null : { id: paid.id, status: paid.status },
    training_intent: trainingIntentOf(state),
    config_fingerprint: config === undefined ? null : configFingerprint(config),
    resumed_from: config?.resumeFrom?.runId ?? null,
    summary: update.summary ?? null,
    waiting_for:
      model === undefined && dataset?.waitingFor !== undefined
        ? { run_id: dataset.waitingFor.runId, model_id: dataset.waitingFor.modelId }
        : null,
    copy_put_off: copyPutOff(copyWaitOf(copy), now),
    encoders: encoderOutcomes(state),
    promotion: update.promotion,
  };
}

function copyPutOff(wait: CopyWaitSlot | undefined, now: number): RunStatus['copy_put_off'] {
  if (wait === undefined) return null;
  return {
    failing_since: wait.failingSince,
    reason: wait.reason,
    next_try_at: new Date(now + wait.waitSeconds * 1000).toISOString(),
    files_deadline: wait.filesDeadline,
  };
}

/** Where the run's model was copied, as s3:// URLs, once it is. */
export function modelLocation(run: RunInput, slot: CopySlot | CopyWaitSlot | undefined): RunStatus['model'] {
  const copy = copiedModel(slot);
  return copy === undefined
    ? null
    : {
        onnx: `s3://${run.bucket}/${copy.modelKey}`,
        record: `s3://${run.bucket}/${copy.recordKey}`,
        bytes: copy.bytes,
      };
}

/** How writeStatus placed a status: as the file's own, or as an entry of a newer run's file. */
export type StatusWrite = 'written' | 'superseded';

/**
 * Writes `status` to status/<drop>.json, so that the newest run of the drop always stays on top
 * (its `run_id` is the file's): every write is conditional (`If-Match` the ETag read, or
 * `If-None-Match: *` for a first status), and a write that lost to another is read and decided
 * again. A status of an older run than the file's does not replace it: it becomes (or updates)
 * that run's entry in `superseded_runs` ('superseded'). A newer run taking the file from a
 * running older one carries the older one into `superseded_runs`.
 */
export async function writeStatus(
  s3: S3Client,
  bucket: string,
  status: RunStatus,
  known?: StatusObject | null,
): Promise<StatusWrite> {
  // The file as the caller read it, when it did: the first write is conditional on its ETag.
  let first = known;
  return await updateJsonConditionally(s3, {
    bucket,
    key: statusKey(status.drop),
    read: async () => {
      const read = first;
      first = undefined;
      return read === undefined ? await readStatusObject(s3, bucket, status.drop) : read;
    },
    decide: (current) => {
      const { document, outcome } = nextDocument(current?.status ?? null, status);
      return { write: document, result: outcome };
    },
    contended: contendedWrite(`status/${status.drop}.json`, ' (other runs of the drop writing it)'),
  });
}

/**
 * Writes a run's first status (the trigger's, before its execution starts: hopper_step
 * validate_drop, nothing validated yet), so the newest train.json's run shows at once and a run
 * cut off before validate_drop ends is still found. A file that already holds this run, names it
 * among its superseded runs, or holds a newer run is left as it is ('kept'): a repeated or late
 * event changes nothing. Otherwise the run takes the file as writeStatus places it.
 */
export async function writeFirstStatus(
  s3: S3Client,
  bucket: string,
  status: RunStatus,
): Promise<'written' | 'kept'> {
  return await updateJsonConditionally(s3, {
    bucket,
    key: statusKey(status.drop),
    read: async () => await readStatusObject(s3, bucket, status.drop),
    decide: (current) => {
      const file = current?.status ?? null;
      const known =
        file !== null &&
        (file.run_id === status.run_id ||
          supersededEntryOf(file, status.run_id) !== null ||
          isNewerRun(file, {
            runId: status.run_id,
            startedAt: status.started_at,
            sequencer: status.sequencer ?? undefined,
          }));
      if (known) return { write: null, result: 'kept' as const };
      return { write: nextDocument(file, status).document, result: 'written' as const };
    },
    contended: contendedWrite(`status/${status.drop}.json`, ' (other runs of the drop writing it)'),
  });
}

/** True when `current`, a status of another run, belongs to a run newer than `runId`'s. */
export function isNewerRun(
  current: Pick<RunStatus, 'run_id' | 'started_at' | 'sequencer'>,
  run: Pick<RunInput, 'runId' | 'startedAt' | 'sequencer'>,
): boolean {
  // The later upload of train.json wins (run-order.ts: by S3's sequencer, else the time).
  return isLaterRun(
    { runId: current.run_id, startedAt: current.started_at, sequencer: current.sequencer },
    run,
  );
}

/** The document to write over `current` for `status`, and how it was placed. */
function nextDocument(
  current: RunStatus | null,
  status: RunStatus,
): { document: RunStatus; outcome: StatusWrite } {
  const earlier = current?.superseded_runs ?? [];
  if (current === null) return { document: { ...status, superseded_runs: [] }, outcome: 'written' };
  if (
    isNewerRun(current, {
      runId: status.run_id,
      startedAt: status.started_at,
      sequencer: status.sequencer ?? undefined,
    })
  ) {
    const entries = withEntry(earlier, supersededEntry(status));
    return { document: { ...current, superseded_runs: entries }, outcome: 'superseded' };
  }
  if (current.run_id === status.run_id) {
    return { document: { ...status, superseded_runs: earlier }, outcome: 'written' };
  }
  // This run takes the file from an older one, which stays named (a resume finds it there, even
  // after this run's first write), with the older runs still going or holding a paid model.
  const older =
    current.state === 'running'
      ? earlier
      : earlier.filter((entry) => entry.state === 'running' || entry.paid_model !== null);
  const carried = withEntry(older, supersededEntry(current)).filter(
    (entry) => entry.run_id !== status.run_id,
  );
  return { document: { ...status, superseded_runs: carried }, outcome: 'written' };
}

function supersededEntry(status: RunStatus): SupersededRun {
  const kept = Object.fromEntries(SUPERSEDED_FIELDS.map((field) => [field, status[field]]));
  return { ...(kept as Pick<RunStatus, SupersededField>), credits: status.summary?.credits ?? 0 };
}

/** `entries` with `entry` in place of the run's earlier one, newest run first, capped. */
function withEntry(entries: readonly SupersededRun[], entry: SupersededRun): SupersededRun[] {
  return [entry, ...entries.filter((other) => other.run_id !== entry.run_id)]
    .sort((a, b) => b.started_at.localeCompare(a.started_at))
    .slice(0, MAX_SUPERSEDED_RUNS);
}

/**
 * The keys of the run records (status/.runs/<drop>/<run id>.json: each ended run's last status,
 * written by the report or the interrupted-run check) of one drop, or of every drop, page by page.
 */
export async function* runRecordKeys(s3: S3Client, bucket: string, drop?: string): AsyncGenerator<string> {
  const prefix = drop === undefined ? `${STATUS_PREFIX}.runs/` : runRecordsPrefix(drop);
  for await (const { Key: key = '' } of objectsUnder(s3, bucket, prefix))
    if (key.endsWith('.json')) yield key;
}

/** A run record (runRecordKeys), or null when it is gone or not a status document. */
export async function readRunRecord(s3: S3Client, bucket: string, key: string): Promise<RunStatus | null> {
  const read = await readJson(s3, bucket, key);
  return read === null ? null : statusFromJson(read.value);
}

/**
 * Every drop that has a status file (`status/<drop>.json`; not the event markers under
 * `status/.events/`), with the file's etag, page by page. For the tools that show all drops.
 */
export async function* statusFiles(
  s3: S3Client,
  bucket: string,
): AsyncGenerator<{ readonly drop: string; readonly etag: string }> {
  for await (const { Key: key = '', ETag: etag = '' } of objectsUnder(s3, bucket, STATUS_PREFIX)) {
    const drop = /^status\/([^/]+)\.json$/.exec(key)?.[1];
    if (drop !== undefined) yield { drop, etag };
  }
}

/**
 * The drop's status, or null when there is none (or it is not a status document). Every reader
 * of status files (hopper status, runs and retry, the console, resuming, the interrupted-run
 * check) reads through here.
 */
export async function readStatus(s3: S3Client, bucket: string, drop: string): Promise<RunStatus | null> {
  return (await readStatusObject(s3, bucket, drop))?.status ?? null;
}

/** status/<drop>.json as read: the status (null when it is not a status document) and its ETag. */
export interface StatusObject {
  readonly status: RunStatus | null;
  readonly etag: string;
}

/**
 * The drop's status file and its ETag, or null when there is none; a file that is not a status
 * document reads as a null status with its ETag (a write replaces it).
 */
export async function readStatusObject(
  s3: S3Client,
  bucket: string,
  drop: string,
): Promise<StatusObject | null> {
  const read = await readJson(s3, bucket, statusKey(drop));
  return read === null ? null : { status: statusFromJson(read.value), etag: read.etag };
}

/**
 * True when the drop's status shows run `runId` ended (succeeded, failed, interrupted): nothing
 * runs it any more. False while it runs, and for a run the status does not name.
 */
export function runHasEnded(status: RunStatus | null, runId: string): boolean {
  const run = status?.run_id === runId ? status : supersededEntryOf(status, runId);
  return run !== null && run.state !== 'running';
}

/** The run's entry in the drop's `superseded_runs`, or null when the file does not list it. */
export function supersededEntryOf(status: RunStatus | null, runId: string): SupersededRun | null {
  return status?.superseded_runs?.find((entry) => entry.run_id === runId) ?? null;
}

/** A parsed status file as a RunStatus, or null when it is not one. */
export function statusFromJson(value: unknown): RunStatus | null {
  if (typeof value !== 'object' || value === null) return null;
  const fields = value as Partial<Record<keyof RunStatus, unknown>>;
  return typeof fields.run_id === 'string' && typeof fields.started_at === 'string'
    ? (value as RunStatus)
    : null;
}
