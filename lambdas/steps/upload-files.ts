/**
 * upload_files: streams each data file still pending at the service from the drop
 * (inbox/<drop>/<name>, pinned to the etag validate_drop saw) to its presigned URL and completes
 * it, UPLOAD_CONCURRENCY files at a time. Constant memory: bytes flow from S3 to the service
 * without being held. Time-boxed: a file is not started when the invocation may end before it is
 * sent, at the rate measured for the files already sent; the files in flight then finish, the slot
 * still says upload_files and the state machine calls this step again, which skips what is done.
 */
import {
  SizeMismatchError,
  isBodyLengthMismatch,
  type Dataset,
  type DatasetFile,
  type NextAction,
} from '../service-client/index.js';
import {
  RunError,
  fileChangedMessage,
  fileDeletedMessage,
  unvalidatedFileMessage,
} from '../core/errors/index.js';
import { defineStep, type Step, type StepEnv, TIME_BOX } from '../runtime/index.js';
import { datasetSlot } from '../core/state/index.js';
import type { DropFile, StateFor } from '../core/state/index.js';
import { inboxKey } from '../storage/keys.js';
import { ObjectChangedError, ObjectMissingError, openPinnedObject } from '../storage/streams.js';

/** The service's word for a file whose bytes have not been completed. */
const PENDING = 'pending';
const UPLOAD_FILES: NextAction = 'upload_files';

/**
 * Files sent at once. Each file is a few round trips (GET from S3, PUT, complete) whose latency,
 * not bandwidth, bounds one file after another; 8 at once measured about 5x faster than one at
 * a time for 1,000 small files, and gave the same total rate as one for large files (the pipe
 * is then the limit). Memory stays small: files stream, nothing is buffered.
 */
export const UPLOAD_CONCURRENCY = 8;
/**
 * The transfer rate assumed for a file before any has been measured in this invocation: low on
 * purpose (S3 to the service through one Lambda does far better), so the first files of an
 * invocation never overrun the time box; after that the measured rate is used.
 */
export const INITIAL_BYTES_PER_SECOND = 2 * 1024 * 1024;
/** Never start a file with less than this left: complete and the status write need time too. */
export const MIN_MARGIN_MS = TIME_BOX.marginMs;
/**
 * Never ask for more than this: a fresh 15-minute invocation always has it, so every invocation
 * starts at least one file and the loop makes progress even for a file larger than the estimate.
 */
export const MAX_MARGIN_MS = TIME_BOX.batchMs;

/**
 * The rate one file streams at, measured over the files sent so far in this invocation (each
 * file's bytes over its own time, so files sent side by side count at the rate each one got).
 */
export class UploadRate {
  #bytes = 0;
  #ms = 0;

  record(bytes: number, ms: number): void {
    this.#bytes += bytes;
    this.#ms += Math.max(1, ms);
  }

  /** Bytes per second: measured once 1 MiB has been sent, else INITIAL_BYTES_PER_SECOND. */
  get bytesPerSecond(): number {
    if (this.#bytes < 1024 * 1024) return INITIAL_BYTES_PER_SECOND;
    return (this.#bytes / this.#ms) * 1000;
  }
}

/** Time a file needs before it may be started, at `bytesPerSecond`. */
export function uploadMarginMs(bytes: number, bytesPerSecond = INITIAL_BYTES_PER_SECOND): number {
  const estimate = Math.ceil((bytes / bytesPerSecond) * 1000);
  return Math.min(MAX_MARGIN_MS, Math.max(MIN_MARGIN_MS, MIN_MARGIN_MS + estimate));
}

/** The record that has seen the most files complete (answers to parallel completes may cross). */
function latest(a: Dataset, b: Dataset): Dataset {
  const uploaded = (record: Dataset) => record.files.filter((f) => f.status !== PENDING).length;
  return uploaded(b) >= uploaded(a) ? b : a;
}

/** The step with another concurrency (the benchmark's one-after-another baseline, tests). */
export function uploadFilesStepWith(concurrency = UPLOAD_CONCURRENCY): Step<'upload_files'> {
  return defineStep('upload_files', async (state, env) => {
    const previous = state.dataset;
    const client = await env.runtime.service();
    let record = await client.getDataset(previous.id);
    // Anything else (files all sent, the dataset expired) is for the state machine to route.
    const pending =
      record.next_action === UPLOAD_FILES ? record.files.filter((f) => f.status === PENDING) : [];
    const rate = new UploadRate();
    let next = 0;
    let stopped = false;
    let failure: { error: unknown } | undefined;
    const worker = async (): Promise<void> => {
      while (!stopped && failure === undefined) {
        const file = pending[next];
        if (file === undefined) return;
        const margin = uploadMarginMs(file.bytes, rate.bytesPerSecond);
        const left = env.remainingMs();
        if (left < margin) {
          stopped = true;
          env.runtime.logger.info('upload_files: time box reached; the next invocation goes on', {
            file: file.name,
            remaining_ms: left,
            margin_ms: margin,
          });
          return;
        }
        next++;
        const started = performance.now();
        try {
          const answered = await uploadOne(env, state, file);
          rate.record(file.bytes, performance.now() - started);
          record = latest(record, answered);
        } catch (error) {
          failure ??= { error }; // the others finish the file they have, then stop
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, pending.length) }, () => worker()));
    if (failure !== undefined) throw failure.error;
    return datasetSlot(record, previous, env.runtime.now());
  });
}

export const uploadFilesStep = uploadFilesStepWith();

/** Streams one file to the service, at its validated version, and completes it; the record complete answered. */
async function uploadOne(env: StepEnv, state: StateFor<'upload_files'>, file: DatasetFile): Promise<Dataset> {
  const { bucket, drop } = state.run;
  const key = inboxKey(drop, file.name);
  const pinned = pinnedFile(state.config.files, file.name);
  const client = await env.runtime.service();
  const started = Date.now();
  try {
    // A fresh S3 stream per attempt: the client sends a failed transfer again whole.
    const record = await client.uploadFile(state.dataset.id, file, () =>
      openPinnedObject(env.runtime.s3, { bucket, key, etag: pinned.etag }),
    );
    env.runtime.logger.info('uploaded', { file: file.name, bytes: file.bytes, ms: Date.now() - started });
    return record;
  } catch (error) {
    const changed =
      error instanceof ObjectChangedError ||
      error instanceof SizeMismatchError ||
      isBodyLengthMismatch(error);
    if (changed) {
      throw new RunError('drop_changed', fileChangedMessage(key), { cause: error });
    }
    if (error instanceof ObjectMissingError) {
      throw new RunError('missing_file', fileDeletedMessage(key), { cause: error });
    }
    throw error;
  }
}

/** The validated version of a file the service lists. */
function pinnedFile(files: readonly DropFile[], name: string): DropFile {
  const pinned = files.find((candidate) => candidate.name === name);
  if (pinned === undefined) {
    throw new RunError(
      'internal_error',
      unvalidatedFileMessage(
        name,
        files.map((f) => f.name),
      ),
    );
  }
  return pinned;
}
