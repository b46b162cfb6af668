/**
 * upload_files: streams each data file still pending at the service from the drop
 * (inbox/<drop>/<name>, pinned to the etag validate_drop saw) to its presigned URL and completes
 * it. Constant memory: bytes flow from S3 to the service without being held. Time-boxed: a file
 * is not started when the invocation may end before it is sent; the slot then still says
 * upload_files and the state machine calls this step again, which skips what is done.
 */
import {
  SizeMismatchError,
  type Dataset,
  type DatasetFile,
  type NextAction,
} from '../service-client/index.js';
import { RunError } from '../run/errors.js';
import { defineStep, type StepEnv } from '../run/handler.js';
import { datasetSlot } from '../run/slots.js';
import type { DropFile, RunInput } from '../run/state.js';
import { inboxKey } from '../storage/keys.js';
import { ObjectChangedError, ObjectMissingError, openPinnedObject } from '../storage/streams.js';
import { TIME_BOX } from '../run/time-box.js';

/** The service's word for a file whose bytes have not been completed. */
const PENDING = 'pending';
const UPLOAD_FILES: NextAction = 'upload_files';

/** A conservative transfer rate for the time box: S3 to the service, through one Lambda. */
export const ASSUMED_BYTES_PER_SECOND = 2 * 1024 * 1024;
/** Never start a file with less than this left: complete and the status write need time too. */
export const MIN_MARGIN_MS = TIME_BOX.marginMs;
/**
 * Never ask for more than this: a fresh 15-minute invocation always has it, so every invocation
 * starts at least one file and the loop makes progress even for a file larger than the estimate.
 */
export const MAX_MARGIN_MS = TIME_BOX.batchMs;

/** Time a file needs before it may be started. */
export function uploadMarginMs(bytes: number): number {
  const estimate = Math.ceil((bytes / ASSUMED_BYTES_PER_SECOND) * 1000);
  return Math.min(MAX_MARGIN_MS, Math.max(MIN_MARGIN_MS, estimate));
}

export const uploadFilesStep = defineStep('upload_files', async (state, env) => {
  const { config, dataset: previous } = state;
  const client = await env.runtime.service();
  let record = await client.getDataset(previous.id);
  // Anything else (files all sent, the dataset expired) is for the state machine to route.
  const pending = record.next_action === UPLOAD_FILES ? record.files.filter((f) => f.status === PENDING) : [];
  for (const file of pending) {
    const margin = uploadMarginMs(file.bytes);
    const left = env.remainingMs();
    if (left < margin) {
      env.runtime.logger.info('upload_files: time box reached; the next invocation goes on', {
        file: file.name,
        remaining_ms: left,
        margin_ms: margin,
      });
      break;
    }
    record = await uploadOne(env, state.run, previous.id, file, pinnedFile(config.files, file.name));
  }
  return datasetSlot(record, previous, env.runtime.now());
});

/** Streams one file to the service and completes it; the record complete answered. */
async function uploadOne(
  env: StepEnv,
  run: RunInput,
  datasetId: string,
  file: DatasetFile,
  pinned: DropFile,
): Promise<Dataset> {
  const { bucket, drop } = run;
  const key = inboxKey(drop, file.name);
  const client = await env.runtime.service();
  const started = Date.now();
  try {
    // A fresh S3 stream per attempt: the client sends a failed transfer again whole.
    const record = await client.uploadFile(datasetId, file, () =>
      openPinnedObject(env.runtime.s3, { bucket, key, etag: pinned.etag }),
    );
    env.runtime.logger.info('uploaded', { file: file.name, bytes: file.bytes, ms: Date.now() - started });
    return record;
  } catch (error) {
    if (error instanceof ObjectChangedError || error instanceof SizeMismatchError) {
      throw new RunError(
        'drop_changed',
        `${key} changed after validation; drop the folder again, train.json last`,
        { cause: error },
      );
    }
    if (error instanceof ObjectMissingError) {
      throw new RunError(
        'missing_file',
        `${key} was deleted after validation; put it back (or drop the folder again), train.json last`,
        { cause: error },
      );
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
      `the dataset lists ${name}, which is not among the drop's validated files (${files.map((f) => f.name).join(', ')})`,
    );
  }
  return pinned;
}
