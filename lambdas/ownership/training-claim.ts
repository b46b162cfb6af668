/**
 * At most one run of a drop spends a credit at a time. Two runs of one drop (train.json uploaded
 * again) can reach start_training together; the one that starts a training first holds the
 * drop's claim, status/.training/<drop>.json, until that training is no longer under way at the
 * service (done, failed, or gone). The claim is taken and handed over with S3 conditional writes
 * (`If-None-Match: *` for the first, `If-Match` its ETag after), so of two runs deciding at the
 * same moment exactly one gets it; the other waits (its dataset waits, see gateTraining) and
 * looks again.
 *
 * A claim whose run has not started its training yet (no model id) is held for
 * CLAIM_FRESH_MS after it was last taken: longer than one start_training invocation can take,
 * so a run about to start its training is never overtaken, and a run that stopped before it
 * (superseded, failed) frees the drop by then at the latest (it also releases the claim itself).
 *
 * A claim whose run has ended waits for nothing of that run: a run training the same dataset
 * takes it at once, and adopts the training the ended run may have started (whose answer a kill
 * or a stop lost); a run of another dataset waits only while that training is under way at the
 * service. A run has ended when the drop's status says so (the report wrote its end, or a restart
 * of local mode marked it interrupted) or, for a run the status still shows running, when its
 * execution no longer runs (Step Functions' DescribeExecution: killed, timed out or stopped
 * before its report could write anything; claimHolderEnded).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { NotFoundError } from '../service-client/errors.js';
import { TRAINING_STATUSES } from '../service-client/contract.js';
import type { TrainingServiceClient } from '../service-client/index.js';
import { trainingClaimKey } from '../storage/keys.js';
import { readJson, updateJsonConditionally, type JsonUpdate } from '../storage/objects.js';
import { contendedWrite } from '../core/errors/errors.js';
import { siblingExecutionArn } from '../core/state/run-name.js';
import type { RunInput, TrainingClaim } from '../core/state/state.js';
import { runHasEnded, type RunStatus } from '../records/status/status.js';

export type { TrainingClaim } from '../core/state/index.js';

/** How long a claim without a training stays held (one start_training invocation and more). */
export const CLAIM_FRESH_MS = 10 * 60_000;

export type ClaimResult = { readonly held: true } | { readonly held: false; readonly holder: TrainingClaim };

export interface ClaimContext {
  readonly s3: S3Client;
  readonly run: RunInput;
  readonly now: number;
  readonly service: () => Promise<TrainingServiceClient>;
  /** True when run `runId` of the drop has ended (claimHolderEnded); absent: no run is known ended. */
  readonly ended?: (runId: string) => Promise<boolean>;
}

/**
 * Whether an execution still runs: `unknown` when it cannot be told (Step Functions unreachable,
 * the call refused), which counts as running. The runtime's, where its function may ask
 * (lambdas/runtime/executions.ts).
 */
export type ExecutionLookup = (executionArn: string) => Promise<'running' | 'ended' | 'unknown'>;

/**
 * `ClaimContext.ended` for `run`: by the drop's status as the invocation read it, then, for a run
 * the status does not show ended, by its execution, when `executions` is given and `run` knows
 * its own ARN (a run's id is its execution's name).
 */
export function claimHolderEnded(
  status: RunStatus | null,
  run: RunInput,
  executions: ExecutionLookup | undefined,
): (runId: string) => Promise<boolean> {
  return async (runId) => {
    if (runHasEnded(status, runId)) return true;
    if (executions === undefined || run.executionArn === undefined) return false;
    return (await executions(siblingExecutionArn(run.executionArn, runId))) === 'ended';
  };
}

/**
 * The claim context of `run` in one invocation: its S3, clock and Step Functions (a runtime's),
 * the drop's status as the invocation found it, and how it reaches the service.
 */
export function claimContextOf(
  runtime: { readonly s3: S3Client; now(): number; readonly executions?: ExecutionLookup },
  run: RunInput,
  status: RunStatus | null,
  service: ClaimContext['service'],
): ClaimContext {
  const { s3, executions } = runtime;
  return { s3, run, now: runtime.now(), service, ended: claimHolderEnded(status, run, executions) };
}

/**
 * Takes the drop's claim for `run` (or confirms it, refreshing its time), unless another run's
 * training holds it; then answers who holds it.
 */
export async function claimTraining(context: ClaimContext, datasetId: string): Promise<ClaimResult> {
  const mine = (model: string | null) => claimOf(context, { dataset: datasetId, model });
  return await conditionally<ClaimResult>(context, async (current) => {
    if (current === null) return { write: mine(null), result: { held: true } };
    const claim = current.claim;
    if (claim.run_id === context.run.runId) return { write: mine(claim.model_id), result: { held: true } };
    if (claim.run_id !== null && (await isBusy(claim, context, datasetId))) {
      return { write: null, result: { held: false, holder: claim } };
    }
    return { write: mine(null), result: { held: true } };
  });
}

/** Records the training `run` started, so other runs can see when it ends. */
export async function recordTraining(
  context: ClaimContext,
  datasetId: string,
  modelId: string,
): Promise<void> {
  await conditionally(context, (current) => {
    const claim = current?.claim;
    // Someone took over a claim this run let go stale: theirs stands (it will see this model).
    const taken = claim !== undefined && claim.run_id !== null && claim.run_id !== context.run.runId;
    return {
      write: taken ? null : claimOf(context, { dataset: datasetId, model: modelId }),
      result: undefined,
    };
  });
}

/**
 * Lets the drop's claim go when `run` holds it and leaves no paid model (`keepsPaidModel` false,
 * supersede.ts holdsPaidModel): a run that ends, or stops, frees the drop for the next run at once,
 * while a paid model keeps the claim for the run that adopts it.
 */
export async function releaseTraining(
  context: Omit<ClaimContext, 'service'>,
  keepsPaidModel: boolean,
): Promise<void> {
  if (keepsPaidModel) return;
  await conditionally(context, (current) => ({
    write: current?.claim.run_id === context.run.runId ? claimOf(context, null) : null,
    result: undefined,
  }));
}

/** The claim `context.run` holds of a dataset (and its training, once started); released: `held` null. */
function claimOf(
  { run, now }: Pick<ClaimContext, 'run' | 'now'>,
  held: { readonly dataset: string; readonly model: string | null } | null,
): TrainingClaim {
  return {
    run_id: held && run.runId,
    started_at: held && run.startedAt,
    dataset_id: held?.dataset ?? null,
    model_id: held?.model ?? null,
    claimed_at: new Date(now).toISOString(),
  };
}

/**
 * True while the holder's training (or the one it is about to start) holds the credit, for a
 * run that would train `wanted`.
 */
async function isBusy(claim: TrainingClaim, context: ClaimContext, wanted: string): Promise<boolean> {
  const { model_id: modelId, dataset_id: datasetId } = claim;
  const ended = claim.run_id !== null && (await context.ended?.(claim.run_id)) === true;
  // The ended run's training of this dataset, if it started one, is the taker's to adopt.
  if (ended && datasetId === wanted) return false;
  const fresh = context.now - Date.parse(claim.claimed_at) < CLAIM_FRESH_MS;
  if (modelId === null && fresh && !ended) return true;
  try {
    if (modelId !== null)
      return TRAINING_STATUSES.includes((await (await context.service()).getModel(modelId)).status);
    // Stale without a model id: the holder may still have started one whose answer it lost.
    if (datasetId === null) return false;
    const client = await context.service();
    const dataset = await client.getDataset(datasetId);
    for await (const model of client.modelsOfDataset(dataset.id, { datasetCreatedAt: dataset.created_at })) {
      if (TRAINING_STATUSES.includes(model.status)) return true;
    }
    return false;
  } catch (error) {
    if (error instanceof NotFoundError) return false;
    throw error;
  }
}

/** The claim as read, with its ETag; null when there is none. */
type ClaimRead = { readonly claim: TrainingClaim; readonly etag: string } | null;

/** Reads the claim, decides, writes conditionally; decides again when another run wrote first. */
async function conditionally<T>(
  context: Pick<ClaimContext, 's3' | 'run'>,
  decide: (current: ClaimRead) => JsonUpdate<T, TrainingClaim> | Promise<JsonUpdate<T, TrainingClaim>>,
): Promise<T> {
  const key = trainingClaimKey(context.run.drop);
  return await updateJsonConditionally(context.s3, {
    bucket: context.run.bucket,
    key,
    read: () => readClaim(context.s3, context.run.bucket, key),
    decide,
    contended: contendedWrite(`the training claim of drop ${context.run.drop} (${key})`),
  });
}

async function readClaim(s3: S3Client, bucket: string, key: string): Promise<ClaimRead> {
  const read = await readJson(s3, bucket, key);
  if (read === null) return null;
  // Not a claim: treated as a released one, which the next write replaces.
  const parsed = (read.value ?? {}) as Partial<TrainingClaim>;
  const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  return {
    claim: {
      run_id: text(parsed.run_id),
      started_at: text(parsed.started_at),
      dataset_id: text(parsed.dataset_id),
      model_id: text(parsed.model_id),
      claimed_at: text(parsed.claimed_at) ?? new Date(0).toISOString(),
    },
    etag: read.etag,
  };
}
