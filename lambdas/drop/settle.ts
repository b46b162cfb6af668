/**
 * Waiting for a drop to finish arriving. train.json is meant to be written last, but sync tools
 * and `aws s3 cp --recursive` upload in their own order: the run may start while data files are
 * still on their way. So validate_drop takes the folder only once nothing in it has changed for
 * a quiet period, and fails with files_still_arriving if that does not happen soon enough,
 * rather than training on what happened to be there.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { RunError } from '../core/errors/errors.js';
import { stillArrivingMessage } from '../core/errors/messages.js';
import type { RunInput } from '../core/state/state.js';
import { inboxPrefix, TRAIN_JSON } from '../storage/keys.js';
import { listForMessage, printable } from './user-text.js';
import { listDrop, type DropListing } from './listing.js';

/** Default quiet period in Lambda: a drop is taken once nothing in it changed for this long. */
export const DROP_QUIET_MS = 5_000;
/** The longest a run waits for a drop to fall quiet (validate_drop's Lambda has a minute). */
export const MAX_SETTLE_MS = 30_000;
/** S3 keeps LastModified in whole seconds: a write may be up to this much later than it says. */
const LAST_MODIFIED_RESOLUTION_MS = 1_000;
/** Time kept back from the invocation's end to report the failure. */
const SETTLE_MARGIN_MS = 10_000;

export interface SettleClock {
  now(): number;
  /** Milliseconds left in this invocation. */
  remainingMs(): number;
}

/**
 * The drop's listing once no object in the folder has been written for `quietMs` (0: as listed
 * now, for callers that upload train.json last themselves).
 * @throws RunError files_still_arriving when the folder keeps changing past MAX_SETTLE_MS
 */
export async function settledListing(
  s3: S3Client,
  run: RunInput,
  quietMs: number,
  clock: SettleClock,
): Promise<DropListing> {
  const giveUpAt = clock.now() + Math.min(MAX_SETTLE_MS, clock.remainingMs() - SETTLE_MARGIN_MS);
  for (;;) {
    const listing = await listDrop(s3, run.bucket, run.drop);
    if (quietMs === 0) return listing;
    const quietAt = listing.newestModifiedAt + LAST_MODIFIED_RESOLUTION_MS + quietMs;
    const now = clock.now();
    if (now >= quietAt) return listing;
    if (now >= giveUpAt) throw stillArriving(run, listing);
    await sleep(Math.min(quietAt, giveUpAt) - now);
  }
}

function stillArriving(run: RunInput, listing: DropListing): RunError {
  const trainJsonAt = listing.modifiedAt.get(TRAIN_JSON) ?? 0;
  const late = [...listing.modifiedAt]
    .filter(([name, modified]) => name !== TRAIN_JSON && modified >= trainJsonAt)
    .map(([name]) => name);
  const which = late.length === 0 ? '' : ` (written with or after train.json: ${listForMessage(late)})`;
  const folder = printable(inboxPrefix(run.drop));
  return new RunError('files_still_arriving', stillArrivingMessage(folder, MAX_SETTLE_MS / 1000, which));
}
