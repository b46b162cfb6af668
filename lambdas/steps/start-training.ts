/**
 * start_training: starts a training of the dataset, or adopts the one already under way, so
 * that a retried invocation never spends a second credit (docs/reliability.md, "One credit per drop").
 *
 * startTraining is not idempotent: when its answer is lost (dropped connection, timeout, 5xx)
 * the client throws a retryable error although the service may have started the training. So
 * every invocation lists the dataset's models first (newest first) and adopts the newest one
 * when it holds a credit (contract.ts holdsCredit); a failed or refunded newest model, one whose
 * files are gone (a resumed run's after model_files_gone), or none, starts another.
 *
 * Whether to adopt, stop or start is one pure rule, lambdas/ownership/adoption.ts spendDecision;
 * it also adopts the model of another run of the drop with the same settings that trained a
 * dataset of its own meanwhile (siblingToAdopt), so one train.json uploaded twice pays once.
 * Two more rules before a new training (lambdas/ownership/supersede.ts): a run a newer train.json of
 * the drop has taken over starts none (it stops, `superseded`; a training of its own it finds
 * under way is adopted, since that credit is spent), and a run starts one only while it holds
 * the drop's training claim (training-claim.ts), so one drop never has two trainings at once.
 *
 * A sweep (train.json `encoders`) trains its encoders one after another from the one dataset
 * (lambdas/core/state/sweep.ts): each invocation trains the sweep's current encoder, and counts
 * and adopts that encoder's models only, so a resumed sweep adopts what each encoder trained.
 * A new training takes a credit from the credit budget first (credit-ledger.ts).
 */
import {
  filesRetentionMs,
  mayHaveActed,
  NoCreditsError,
  ServiceError,
  trainingDurationMs,
  NotFoundError,
  UnknownEncoderError,
  type Dataset,
  type Encoder,
  type Model,
  type TrainingServiceClient,
} from '../service-client/index.js';
import {
  RunError,
  retryable,
  datasetExpiredMessage,
  noCreditsMessage,
  trainingFailedMessage,
  trainingInProgressMessage,
  unknownEncoderMessage,
} from '../core/errors/index.js';
import { defineStep } from '../runtime/index.js';
import {
  supersededError,
  claimContextOf,
  claimTraining,
  recordTraining,
  siblingToAdopt,
  spendDecision,
  stopIfTrainJsonChanged,
} from '../ownership/index.js';
import { expectedFinish } from '../core/schedule/index.js';
import {
  attemptsLeft,
  configFingerprint,
  modelSlot,
  sweepOnwards,
  trainingOrdinal,
  trainingPlan,
} from '../core/state/index.js';
import type { AccountHistory, RunConfig, RunState, StateFor, SweepSlot } from '../core/state/index.js';

export const startTrainingStep = defineStep(
  'start_training',
  async (state, env) => {
    const { config, dataset: datasetSlot } = state;
    const client = await env.runtime.service();
    const dataset = await client.getDataset(datasetSlot.id);
    const sweep = config.encoders === undefined ? undefined : await sweepToTrain(state, client);
    // A sweep trains the encoder after those it has finished.
    const encoder = sweep?.encoders[sweep.outcomes.length] ?? config.encoder;
    const models = (await modelsOf(client, dataset)).filter(
      (model) => sweep === undefined || model.encoder === encoder,
    );
    const plan = (attempts: number) => trainingPlan(attempts, config.maxAttempts, sweep);
    // The backoff of a new model starts afresh; the run's poll count carries on.
    const previous = state.model ?? datasetSlot;
    // Looked up once per run, at its first training; a retry's slot carries it on (modelSlot).
    const history = state.model === undefined ? await accountHistory(client) : undefined;

    const newest = models[0];
    const found = env.found?.status ?? null;
    const claim = claimContextOf(env.runtime, state.run, found, () => Promise.resolve(client));
    const otherRuns = found === null ? [] : [found, ...(found.superseded_runs ?? [])];
    // A sweep adopts no model of another dataset. No service call unless such a run exists.
    const sibling = sweep === undefined ? await siblingModel(client, state, otherRuns) : undefined;
    const decision = spendDecision({
      newest,
      run: state.run,
      resumeFrom: config.resumeFrom,
      otherRuns,
      supersededBy: env.supersededBy,
      sibling,
    });
    if (decision.act === 'adopt-sibling' && sibling !== undefined) {
      // Another run with these settings started its training after this one read the drop's
      // status (so this run made a dataset of its own): that model is this train.json's, paid.
      await recordTraining(claim, dataset.id, sibling.model.id);
      const slot = modelSlot(sibling.model, plan(1), previous, env.runtime.now(), history);
      return { ...slot, paidBy: decision.paidBy };
    }
    if (decision.act === 'adopt' && newest !== undefined) {
      // This run's own training (a lost answer, or a retried invocation), or an earlier run's: the
      // paid model of the run it resumes or adopts. Its credit is spent either way.
      await recordTraining(claim, dataset.id, newest.id);
      const slot = modelSlot(newest, plan(models.length), previous, env.runtime.now(), history);
      return decision.paidBy === undefined ? slot : { ...slot, paidBy: decision.paidBy };
    }
    if (decision.act === 'stop') throw supersededError(state, decision.newer, 'start_training');
    refuseToTrain(dataset, models, config);
    // The status file names a newer run only once that run's drop has settled; the bucket sooner.
    await stopIfTrainJsonChanged(env.runtime.s3, state, 'start_training');
    const held = await claimTraining(claim, dataset.id);
    if (!held.held) {
      // Rare: the claim the dataset step took went stale and another run took it meanwhile.
      throw retryable('training_in_progress', trainingInProgressMessage(state.run.drop, held.holder));
    }
    const trained = plan(models.length + 1);
    const record = await env.runtime.credits.spend(state.run, trainingOrdinal(trained), () =>
      startTraining(client, dataset, encoder, models),
    );
    await recordTraining(claim, dataset.id, record.id);
    return modelSlot(record, trained, previous, env.runtime.now(), history);
  },
  { decidesWhenSuperseded: true },
);

/**
 * Before a new training of `dataset`, whose (encoder's) models are `models`.
 * @throws RunError training_failed with no attempt left, dataset_expired for an expired dataset
 */
function refuseToTrain(dataset: Dataset, models: readonly Model[], config: RunConfig): void {
  const newest = models[0];
  if (newest !== undefined && !attemptsLeft(models.length, config.maxAttempts)) {
    // The Choice counts attempts too; this guards the case it cannot see (a training started
    // by a lost call that failed before this retry), counting what the service holds.
    const tried = { attempts: models.length, maxAttempts: config.maxAttempts, modelId: newest.id };
    throw new RunError('training_failed', trainingFailedMessage({ ...tried, error: newest.error }));
  }
  if (dataset.next_action === 'expired') {
    const expired = { id: dataset.id, expiresAt: dataset.expires_at, step: dataset.step };
    throw new RunError('dataset_expired', datasetExpiredMessage(expired));
  }
}

/**
 * The model of another run of the drop with the same settings that trained another dataset
 * (adoption.ts siblingToAdopt), as the service shows it now; undefined when there is none or the
 * service no longer holds it.
 */
async function siblingModel(
  client: TrainingServiceClient,
  state: StateFor<'start_training'>,
  runs: Parameters<typeof siblingToAdopt>[0],
): Promise<{ readonly runId: string; readonly model: Model } | undefined> {
  const fingerprint = configFingerprint(state.config);
  const sibling = siblingToAdopt(runs, state.run, fingerprint, state.dataset.id);
  if (sibling === undefined) return undefined;
  try {
    return { runId: sibling.runId, model: await client.getModel(sibling.modelId) };
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** Done models looked at for their files' retention and their trainings' durations: one page. */
export const RETENTION_SAMPLE = 25;

/**
 * What the account's latest done models tell (one page of them, newest first):
 * - the shortest time they kept their files after finishing, in seconds: polling stays well
 *   inside it (pollCeilingSeconds), so a service that deletes files soon after a training ends
 *   does not take a paid model with it;
 * - how long their trainings took: polling is dense where this one is expected to finish.
 */
async function accountHistory(client: TrainingServiceClient): Promise<AccountHistory> {
  const pages = client.listModels({ status: 'done', limit: RETENTION_SAMPLE }).pages();
  const first = await pages.next();
  await pages.return(undefined);
  const done = first.done === true ? [] : first.value.data;
  const retentions = done.map(filesRetentionMs).filter((ms): ms is number => ms !== null);
  const durations = done.map(trainingDurationMs).filter((ms): ms is number => ms !== null);
  return {
    filesRetentionSeconds: retentions.length === 0 ? null : Math.floor(Math.min(...retentions) / 1000),
    expectedFinish: expectedFinish(durations.map((ms) => ms / 1000)),
  };
}

/** Every model of the dataset, newest first (paging stops at models older than the dataset). */
async function modelsOf(client: TrainingServiceClient, dataset: Dataset): Promise<Model[]> {
  const models: Model[] = [];
  for await (const model of client.modelsOfDataset(dataset.id, { datasetCreatedAt: dataset.created_at })) {
    models.push(model);
  }
  return models;
}

/** The sweep a run trains: the model slot's, or at its first training the encoders resolved. */
async function sweepToTrain(
  state: RunState & { readonly config: RunConfig },
  client: TrainingServiceClient,
): Promise<SweepSlot> {
  const onwards = sweepOnwards(state);
  if (onwards !== undefined) return onwards;
  const wanted = state.config.encoders ?? 'all';
  const offered = await client.listEncoders();
  const unknown = wanted === 'all' ? [] : wanted.filter((id) => !offered.some((option) => option.id === id));
  if (unknown.length > 0) {
    throw new RunError(
      'unknown_encoder',
      unknownEncoderMessage({ encoder: unknown.join('", "'), offered: offeredList(offered) }),
    );
  }
  return { encoders: wanted === 'all' ? offered.map((option) => option.id) : wanted, outcomes: [] };
}

function offeredList(encoders: readonly Encoder[]): string {
  return encoders.map((option) => `"${option.id}"${option.default ? ' (default)' : ''}`).join(', ');
}

async function startTraining(
  client: TrainingServiceClient,
  dataset: Dataset,
  encoder: string | null,
  modelsBefore: readonly Model[],
): Promise<Model> {
  try {
    return await client.startTraining(dataset.id, encoder ?? (await client.defaultEncoder()).id);
  } catch (error) {
    if (error instanceof ServiceError && mayHaveActed(error)) {
      // The answer was lost or garbled after the request left: the training may have started
      // (and the credit be spent). Read the dataset's models rather than pay again: the newest
      // one not among `modelsBefore` is one this step's call started.
      const known = new Set(modelsBefore.map((model) => model.id));
      const started = (await modelsOf(client, dataset)).find((model) => !known.has(model.id));
      if (started !== undefined) return started;
    }
    if (error instanceof NoCreditsError) {
      throw new RunError('no_credits', noCreditsMessage(dataset.id), { cause: error });
    }
    if (error instanceof UnknownEncoderError && encoder !== null) {
      const offered = offeredList(await client.listEncoders());
      throw new RunError('unknown_encoder', unknownEncoderMessage({ encoder, offered }), { cause: error });
    }
    throw error;
  }
}
