/**
 * status/<drop>.json: the live state of a drop's latest run, rewritten after every step so a
 * person (or `hopper run`) can see where the run stands and, when it fails, why and what to do.
 * Field names follow the service's snake_case, since `step` and `next_action` are its words.
 *
 * Three words a reader must tell apart (docs/drop-format.md, "Reading status.json"): `state` is
 * the run's (running, succeeded, failed, interrupted), `hopper_step` is Hopper's step that wrote
 * the file (validate_drop ... report), `step` and `next_action` are the service's. A file written
 * before `hopper_step` existed calls it `stage`: readStatus reads both.
 */
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { STATUS_PREFIX, statusKey } from '../storage/keys.js';
import { isNotFound, putJson } from '../storage/objects.js';
import type { NextAction } from '../service-client/contract.js';
import type { CopySlot, RunFailure, RunInput, RunState } from './state.js';
import type { RunSummary } from './usage.js';
import type { StepName } from './vocabulary.js';

/**
 * `interrupted`: local mode stopped while the run was going, and nothing runs it any more (set
 * when `hopper local --data-dir` starts again, see interruptedStatus).
 */
export type RunPhase = 'running' | 'succeeded' | 'failed' | 'interrupted';

export interface RunStatus {
  readonly run_id: string;
  readonly drop: string;
  /** The run's state (DESIGN.md's word): running, succeeded, failed, or interrupted (local mode). */
  readonly state: RunPhase;
  /** Hopper's step that wrote this status (`upload_files`, ...; `stage` in files before it). */
  readonly hopper_step: StepName;
  /** The service's step and next_action for the record the run is at (model once there is one). */
  readonly step: number | null;
  readonly next_action: NextAction | null;
  readonly dataset_id: string | null;
  readonly model_id: string | null;
  readonly attempts: number;
  readonly max_attempts: number | null;
  readonly labelled: number;
  /** The data files the run sends and its labels file, once validate_drop has taken the drop. */
  readonly files: readonly string[] | null;
  readonly labels: string | null;
  readonly started_at: string;
  readonly updated_at: string;
  readonly finished_at: string | null;
  readonly error: RunFailure | null;
  /** Where the model was copied, once it is. */
  readonly model: { readonly onnx: string; readonly record: string; readonly bytes: number } | null;
  /**
   * What the run has used and cost so far (lambdas/run/usage.ts), including the invocation that
   * wrote this status; null in a status written before Hopper kept one.
   */
  readonly summary: RunSummary | null;
}

export interface StatusUpdate {
  /** The step writing the status. */
  readonly hopperStep: StepName;
  readonly state?: RunPhase;
  readonly error?: RunFailure | null;
  readonly summary?: RunSummary | null;
}

/** The status document for a state, as of `now`. */
export function statusOf(state: RunState, update: StatusUpdate, now: number): RunStatus {
  const { run, dataset, model, copy, config } = state;
  const record = model ?? dataset;
  const phase = update.state ?? 'running';
  const timestamp = new Date(now).toISOString();
  return {
    run_id: run.runId,
    drop: run.drop,
    state: phase,
    hopper_step: update.hopperStep,
    step: record?.step ?? null,
    next_action: record?.nextAction ?? null,
    dataset_id: dataset?.id ?? null,
    model_id: model?.id ?? null,
    attempts: model?.attempts ?? 0,
    max_attempts: config?.maxAttempts ?? null,
    labelled: dataset?.labelled ?? 0,
    files: config?.files.map((file) => file.name) ?? null,
    labels: config?.labels?.name ?? null,
    started_at: run.startedAt,
    updated_at: timestamp,
    finished_at: phase === 'running' ? null : timestamp,
    error: update.error ?? null,
    model: modelLocation(run, copy),
    summary: update.summary ?? null,
  };
}

/** Where the run's model was copied, as s3:// URLs, once it is. */
export function modelLocation(run: RunInput, copy: CopySlot | undefined): RunStatus['model'] {
  return copy === undefined
    ? null
    : {
        onnx: `s3://${run.bucket}/${copy.modelKey}`,
        record: `s3://${run.bucket}/${copy.recordKey}`,
        bytes: copy.bytes,
      };
}

/**
 * The status of a run that was still `running` when local mode stopped: nothing runs it now, so
 * it says so, and how to start it over (the drop's files are still in the bucket).
 */
export function interruptedStatus(status: RunStatus, now: number): RunStatus {
  const timestamp = new Date(now).toISOString();
  return {
    ...status,
    state: 'interrupted',
    updated_at: timestamp,
    finished_at: timestamp,
    error: {
      code: 'interrupted',
      message: `local mode stopped while this run was at ${status.hopper_step}, and nothing runs it now. Upload inbox/${status.drop}/train.json again to start it over: the drop's other files are still in the bucket`,
    },
  };
}

/**
 * Writes the status unless a newer run of the same drop owns the file: two runs of one drop
 * (train.json dropped again) must not leave the older one's state on top.
 */
export async function writeStatus(s3: S3Client, bucket: string, status: RunStatus): Promise<boolean> {
  const current = await readStatus(s3, bucket, status.drop);
  if (current !== null && current.run_id !== status.run_id && current.started_at > status.started_at) {
    return false;
  }
  await putJson(s3, bucket, statusKey(status.drop), status);
  return true;
}

/**
 * Every drop that has a status file (`status/<drop>.json`; not the event markers under
 * `status/.events/`), with the file's etag, page by page. For the tools that show all drops.
 */
export async function* statusFiles(
  s3: S3Client,
  bucket: string,
): AsyncGenerator<{ readonly drop: string; readonly etag: string }> {
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: STATUS_PREFIX, ContinuationToken: token }),
    );
    for (const { Key: key = '', ETag: etag = '' } of page.Contents ?? []) {
      const drop = /^status\/([^/]+)\.json$/.exec(key)?.[1];
      if (drop !== undefined) yield { drop, etag };
    }
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}

/**
 * The drop's status, or null when there is none (or it is not a status document). Every reader
 * of status files (hopper status, runs and retry, the console, resuming, the interrupted-run
 * check) reads through here, so a file of an earlier version is read the same way everywhere.
 */
export async function readStatus(s3: S3Client, bucket: string, drop: string): Promise<RunStatus | null> {
  try {
    const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: statusKey(drop) }));
    const text = (await answer.Body?.transformToString()) ?? '';
    return statusFromJson(JSON.parse(text));
  } catch (error) {
    if (isNotFound(error) || error instanceof SyntaxError) return null;
    throw error;
  }
}

/**
 * A parsed status file as this version's RunStatus, or null when it is not one. A file written
 * before `hopper_step` has `stage` instead: it is read as `hopper_step` (and not kept).
 */
export function statusFromJson(value: unknown): RunStatus | null {
  if (typeof value !== 'object' || value === null) return null;
  const fields = value as Partial<Record<keyof RunStatus | 'stage', unknown>>;
  if (typeof fields.run_id !== 'string' || typeof fields.started_at !== 'string') return null;
  if (fields.hopper_step !== undefined || typeof fields.stage !== 'string') return value as RunStatus;
  const { stage, ...rest } = fields;
  return { ...rest, hopper_step: stage } as RunStatus;
}
