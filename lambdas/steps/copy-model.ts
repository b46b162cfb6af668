/**
 * copy_model: streams the finished model from the service into
 * models/<drop>/<model id>/model.onnx (multipart, constant memory), checks the stored size
 * against the service's onnx_bytes, then writes model.json beside it. model.json is written
 * last and only after the size check, so its presence means a complete, verified copy: a
 * half-written model is never presented as done, and a retried copy that finds one is done.
 *
 * The model is paid for, so a copy that fails for a reason that may pass (the service or S3
 * unreachable or busy, the step out of time) does not end the run: the step returns a
 * CopyWaitSlot and the state machine waits (WaitToCopy) and copies again, for as long as the
 * model's files can still be at the service, never sleeping past files_expire_at less a margin
 * (lambdas/core/schedule/files-deadline.ts). Past that the run fails with model_files_gone, saying why.
 *
 * A model too large for one invocation is copied over several: an invocation with less than its
 * time box's margin left starts no new part, leaves the multipart upload open and returns its
 * place in the slot (waitSeconds 0); the next one goes on from the parts S3 holds (ListParts),
 * fetching the rest from the service with Range. A copy put off after a failure goes on the same
 * way; a final failure aborts the upload.
 */
import { Readable } from 'node:stream';
import {
  FilesExpiredError,
  RetryLaterError,
  SizeMismatchError,
  type Model,
  type TrainingServiceClient,
} from '../service-client/index.js';
import type { S3Client } from '@aws-sdk/client-s3';
import {
  toRunError,
  messageOf,
  RunError,
  modelFilesGoneMessage,
  modelNotFinishedMessage,
  modelSizeUnknownMessage,
  modelSentSizeMessage,
  retryable,
  modelStoredSizeMessage,
} from '../core/errors/index.js';
import { waitForFiles } from '../core/schedule/index.js';
import { defineStep, TIME_BOX, type Step, type StepEnv, type StepRun } from '../runtime/index.js';
import { copyWaitOf, type CopySlot, type CopyWaitSlot, type RunState } from '../core/state/index.js';
import type { EncoderOutcome } from '../core/state/index.js';
import type { Promotion, RunSummary } from '../records/status/index.js';
import { modelFileKey, modelRecordKey } from '../storage/keys.js';
import { deleteObject, objectSize, putJson } from '../storage/objects.js';
import {
  abortUpload,
  storedParts,
  uploadStream,
  type StreamUploadOptions,
  type UploadPlace,
} from '../storage/multipart.js';

const ONNX_CONTENT_TYPE = 'application/octet-stream';

/** A model as current.json and the lineage name it. */
export interface ModelSummary {
  readonly model_id: string;
  readonly run_id: string;
  /** When the model's run started: runs are ordered by it, after its sequencer. */
  readonly run_started_at: string;
  /** S3's sequencer of the run's train.json event, when it had one (run-order.ts): orders runs first. */
  readonly run_sequencer?: string;
  readonly encoder: string;
  /** When the service created the model (its training started). */
  readonly created_at: string;
  readonly metrics: Readonly<Record<string, unknown>>;
}

/** model.json's `previous`: the model it was compared with, and its metrics minus that model's. */
export interface PreviousModel extends ModelSummary {
  readonly differences: Readonly<Record<string, number>>;
}

/** model.json: the service's record of the model, the run's summary and what it cost, its lineage. */
export interface ModelDocument {
  readonly model: Model;
  readonly run: {
    readonly run_id: string;
    readonly drop: string;
    readonly dataset_id: string;
    readonly attempts: number;
    readonly started_at: string;
    /** S3's sequencer of the run's train.json event, when it had one (orders the drop's runs). */
    readonly sequencer?: string;
    readonly finished_at: string;
    readonly encoder: string;
    readonly files: readonly string[];
    /** The labels file, or null when the drop has none. */
    readonly labels: string | null;
    readonly labelled: number;
  };
  readonly cost: {
    /** One training is paid for: a failed attempt's credit comes back. */
    readonly credits: number;
    readonly gpu_usd: number | null;
    readonly jev_usd: number | null;
  };
  /**
   * What the run used and cost up to this copy (lambdas/records/status/usage.ts): the report that follows
   * is in status/<drop>.json only. Null when the step ran outside the handler wrapper.
   */
  readonly summary: RunSummary | null;
  /** Written by the run's report (lineage.ts): the drop's model this one was compared with. */
  readonly previous?: PreviousModel | null;
  readonly promotion?: Pick<Promotion, 'promoted' | 'reason'>;
  /** In a sweep: every encoder's outcome. */
  readonly encoders?: readonly EncoderOutcome[];
}

export interface CopyModelOptions extends Pick<StreamUploadOptions, 'partBytes' | 'queueSize'> {
  /** No part but an invocation's first starts with less time left (default: TIME_BOX.marginMs). */
  readonly marginMs?: number;
}

/** The copy's open multipart upload, once there is one. */
interface OpenUpload {
  place?: UploadPlace;
}

/** The step with chosen part size, queue size and time box (tests use small parts to force several). */
export function createCopyModelStep(options: CopyModelOptions = {}): Step<'copy_model'> {
  const copy = copyModel(options);
  return defineStep('copy_model', async (state, env) => {
    const upload: OpenUpload = {};
    try {
      return await copy(state, env, upload);
    } catch (error) {
      let waiting: CopyWaitSlot | undefined;
      try {
        waiting = waitToCopy(state, error, env);
      } finally {
        // A final failure leaves nothing behind; a copy put off goes on with its upload.
        const { place } = upload;
        if (waiting === undefined && place !== undefined)
          await abortUpload(env.runtime.s3, modelObject(state), place);
      }
      if (waiting === undefined) throw error;
      return upload.place === undefined ? waiting : { ...waiting, upload: upload.place };
    }
  });
}

const modelObject = (state: Parameters<StepRun<'copy_model'>>[0]) => ({
  Bucket: state.run.bucket,
  Key: modelFileKey(state.run.drop, state.model.id),
});

export const copyModelStep = createCopyModelStep();

/**
 * The slot that puts the copy off after `error`, or undefined when the error is final.
 * @throws RunError model_files_gone when the copy kept failing until the files could be gone
 */
function waitToCopy(
  state: Parameters<StepRun<'copy_model'>>[0],
  error: unknown,
  env: StepEnv,
): CopyWaitSlot | undefined {
  if (!(toRunError(error).retryable || error instanceof RetryLaterError)) return undefined;
  const { model } = state;
  const now = env.runtime.now();
  const reason = messageOf(error);
  const retryAfterMs = error instanceof RetryLaterError ? error.retryAfterMs : undefined;
  const { previous, waiting } = filesWaitOf(state, now, retryAfterMs);
  if (waiting === undefined) {
    const failedCopies = { since: previous?.failingSince ?? new Date(now).toISOString(), lastError: reason };
    const gone = {
      id: model.id,
      drop: state.run.drop,
      goneAt: previous?.filesDeadline ?? model.filesExpireAt,
    };
    throw new RunError('model_files_gone', modelFilesGoneMessage({ ...gone, failedCopies }), {
      cause: error,
    });
  }
  env.runtime.logger.warn('copy failed; copying again while the files can still be at the service', {
    model_id: model.id,
    failing_since: waiting.failingSince,
    files_deadline: waiting.deadline,
    wait_seconds: waiting.schedule.waitSeconds,
    reason,
  });
  return { ...waiting.schedule, failingSince: waiting.failingSince, filesDeadline: waiting.deadline, reason };
}

/**
 * One copy: the download (from where the last one stopped), then model.json; or the slot of a
 * copy stopped by its time box. What the step does before any failure.
 */
function copyModel(options: CopyModelOptions) {
  return async (
    state: Parameters<StepRun<'copy_model'>>[0],
    env: StepEnv,
    upload: OpenUpload,
  ): Promise<CopySlot | CopyWaitSlot> => {
    const { s3 } = env.runtime;
    const { bucket, drop } = state.run;
    const client = await env.runtime.service();
    const model = await client.getModel(state.model.id);
    const slot = { modelKey: modelFileKey(drop, model.id), recordKey: modelRecordKey(drop, model.id) };
    const record = () => modelDocument(state, model, env.runtime.now(), env.summary?.(state));
    const writeRecord = () => putJson(s3, bucket, slot.recordKey, record());
    const bytes = model.onnx_bytes;
    if (bytes !== null && (await objectSize(s3, bucket, slot.modelKey)) === bytes) {
      // An earlier attempt copied model.onnx (a multipart upload appears whole or not at all,
      // and completes only after the byte count checked out): finish its work, even if the
      // service has deleted the files since.
      if ((await objectSize(s3, bucket, slot.recordKey)) === null) await writeRecord();
      env.runtime.logger.info('model already copied', { model_id: model.id });
      return { ...slot, bytes };
    }
    const size = copyableSize(model, drop, copyWaitOf(state.copy));
    const started = Date.now();
    const into = { s3, bucket, key: slot.modelKey, options, env, upload };
    const stopped = await download(client, model, size, into, copyWaitOf(state.copy)?.upload).catch(
      async (error: unknown) => {
        if (!(error instanceof FilesExpiredError)) throw error;
        const now = await client.getModel(model.id).catch(() => model);
        throw filesGone(now, drop, copyWaitOf(state.copy), error);
      },
    );
    if (stopped !== null) return timeBoxed(state, env, stopped);
    env.runtime.logger.info('model copied', { model_id: model.id, bytes: size, ms: Date.now() - started });
    await writeRecord();
    return { ...slot, bytes: size };
  };
}

/**
 * The size of a model that can be copied now.
 * @throws RunError model_files_gone when its files are gone, service_error when it is not
 *   finished or has no size to check the copy against
 */
function copyableSize(model: Model, drop: string, waited: CopyWaitSlot | undefined): number {
  if (model.next_action === 'none' || model.files_deleted_at !== null) throw filesGone(model, drop, waited);
  if (model.next_action !== 'download') throw new RunError('service_error', modelNotFinishedMessage(model));
  if (model.onnx_bytes === null) throw new RunError('service_error', modelSizeUnknownMessage(model.id));
  return model.onnx_bytes;
}

interface CopyTarget {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly key: string;
  readonly options: CopyModelOptions;
  readonly env: StepEnv;
  readonly upload: OpenUpload;
}

/**
 * Streams the model into model.onnx, going on with the upload at `resumeAt` if it is still open,
 * and checks the size S3 stored (a wrong copy is deleted). Returns null once copied, or the
 * upload's place when the time box stopped it.
 */
async function download(
  client: TrainingServiceClient,
  model: Model,
  bytes: number,
  into: CopyTarget,
  resumeAt: UploadPlace | undefined,
): Promise<UploadPlace | null> {
  const { s3, bucket, key, env, options } = into;
  const resume =
    resumeAt === undefined ? null : await storedParts(s3, { Bucket: bucket, Key: key }, resumeAt);
  into.upload.place = resume?.place;
  const from = resume?.bytes ?? 0;
  if (from > 0) env.runtime.logger.info('copy goes on', { model_id: model.id, from_byte: from, bytes });
  // Every part stored: nothing left to fetch, only the completion.
  const source =
    from === bytes ? Readable.from([]) : client.downloadModel(model.id, { expectedBytes: bytes, from });
  const marginMs = options.marginMs ?? TIME_BOX.marginMs;
  const upload: StreamUploadOptions = {
    ...options,
    expectedBytes: bytes,
    contentType: ONNX_CONTENT_TYPE,
    resume: resume ?? undefined,
    stopBefore: () => env.remainingMs() < marginMs,
    onOpen: (place) => (into.upload.place = place),
  };
  const stopped = await uploadStream(s3, bucket, key, source, upload).catch((error: unknown) => {
    if (!(error instanceof SizeMismatchError)) throw error;
    throw new RunError('model_size_mismatch', modelSentSizeMessage(model.id, bytes, error.message), {
      cause: error,
    });
  });
  if (stopped !== null) return stopped;
  into.upload.place = undefined; // completed: no upload left to go on with or abort
  const stored = await objectSize(s3, bucket, key);
  if (stored === bytes) return null;
  await deleteObject(s3, bucket, key);
  // The download had the right size, so S3 stored something else: a new copy may work.
  throw retryable('model_size_mismatch', modelStoredSizeMessage(`s3://${bucket}/${key}`, stored, bytes));
}

/**
 * The copy slot so far and the wait before the next copy, while the model's files can still be
 * at the service (undefined once they may be gone). A first wait backs off afresh (the model
 * slot's wait is over); the run's counts go on.
 */
function filesWaitOf(state: Parameters<StepRun<'copy_model'>>[0], now: number, retryAfterMs?: number) {
  const { model } = state;
  const previous = copyWaitOf(state.copy);
  const waiting = waitForFiles({
    now,
    previous: previous ?? model,
    failingSince: previous?.failingSince,
    filesExpireAt: model.filesExpireAt,
    filesRetentionSeconds: model.filesRetentionSeconds,
    retryAfterMs,
  });
  return { previous, waiting };
}

/** The slot of a copy its time box stopped: the next invocation goes on at once, from `place`. */
function timeBoxed(
  state: Parameters<StepRun<'copy_model'>>[0],
  env: StepEnv,
  place: UploadPlace,
): CopyWaitSlot {
  const { model } = state;
  const { previous, waiting } = filesWaitOf(state, env.runtime.now());
  // Its files could be gone by now: the catch in createCopyModelStep aborts the upload.
  if (waiting === undefined) {
    const goneAt = previous?.filesDeadline ?? model.filesExpireAt;
    const failedCopies = previous && { since: previous.failingSince, lastError: previous.reason };
    const message = modelFilesGoneMessage({ id: model.id, drop: state.run.drop, goneAt, failedCopies });
    throw new RunError('model_files_gone', message);
  }
  const reason = 'time box reached: the next invocation goes on from the parts stored';
  env.runtime.logger.info('copy_model: time box reached; the next invocation goes on', {
    model_id: model.id,
  });
  const schedule = {
    ...waiting.schedule,
    waitSeconds: 0,
    totalWaitSeconds: (previous ?? model).totalWaitSeconds,
  };
  return {
    ...schedule,
    failingSince: waiting.failingSince,
    filesDeadline: waiting.deadline,
    reason,
    upload: place,
  };
}

/** model_files_gone; `waited` when copies failed before, so the message says why none got through. */
function filesGone(model: Model, drop: string, waited: CopyWaitSlot | undefined, cause?: unknown): RunError {
  const message = modelFilesGoneMessage({
    id: model.id,
    drop,
    goneAt: model.files_deleted_at ?? model.files_expire_at,
    movedTo: model.hf_repo,
    failedCopies: waited && { since: waited.failingSince, lastError: waited.reason },
  });
  return new RunError('model_files_gone', message, { cause });
}

export function modelDocument(
  state: RunState,
  model: Model,
  now: number,
  summary: RunSummary | null = null,
): ModelDocument {
  return {
    model,
    run: {
      run_id: state.run.runId,
      drop: state.run.drop,
      dataset_id: model.dataset_id,
      attempts: state.model?.attempts ?? 1,
      started_at: state.run.startedAt,
      ...(state.run.sequencer === undefined ? {} : { sequencer: state.run.sequencer }),
      finished_at: new Date(now).toISOString(),
      encoder: model.encoder,
      files: state.config?.files.map((file) => file.name) ?? [],
      labels: state.config?.labels?.name ?? null,
      labelled: state.dataset?.labelled ?? 0,
    },
    cost: { credits: 1, gpu_usd: model.gpu_usd, jev_usd: model.jev_usd },
    summary,
  };
}
