/**
 * The one rule for "may this run spend a credit, or must it adopt what was paid for or is in
 * flight" (docs/reliability.md, "One owner for a drop's paid work"). Pure over what the run
 * knows, so both places that decide ask it and nothing else:
 * - validate_drop, of the drop's earlier runs (adoptsWorkOf, through resume.ts workToAdopt): a
 *   new run with the same settings as a run that holds a paid model, or was about to start its
 *   training (its `training_intent`), or has a dataset past its uploads, and is still running or
 *   was interrupted, takes that run's dataset instead of creating one; its start_training then
 *   adopts the model found there. A dataset still taking files is not taken: the earlier run may
 *   be uploading to it as the new run starts (it gives way only at its next step);
 * - start_training, of the dataset's models (spendDecision): a model that holds a credit is
 *   adopted, never paid for again; so is the model of another run of the drop with the same
 *   settings (siblingToAdopt: it started its training after this run had read the drop's status,
 *   so this run made a dataset of its own); a run a newer train.json took over starts none; else it
 *   may start one (the training claim and the credit budget still have their say).
 */
import { holdsCredit } from '../service-client/contract.js';
import type { Model } from '../service-client/index.js';
import type { RunPhase } from '../core/state/vocabulary.js';
import type { RunStatus } from '../records/status/status.js';
import type { NewerRun } from './supersede.js';

/** What adoptsWorkOf reads of an earlier run of the drop (its status, or its entry in the file). */
export type AdoptableRun = Pick<
  RunStatus,
  'state' | 'dataset_id' | 'paid_model' | 'training_intent' | 'config_fingerprint' | 'next_action'
>;

/** Why a new run adopts an earlier run's work: what it paid for, was about to, or its dataset. */
export type AdoptionReason = 'paid_model' | 'training_intent' | 'dataset';

/** Runs whose paid model nothing else copies for the drop's newest train.json yet. */
const HOLDING: readonly RunPhase[] = ['running', 'failed', 'interrupted'];
/** Runs whose intended training may be at the service with no one to adopt it. */
const INTENDING: readonly RunPhase[] = ['running', 'interrupted'];

/**
 * Whether a new run with settings `fingerprint` adopts the work of `run`, an earlier run of the
 * drop, and why; null when it starts its own. A failed run's intent is left to `hopper retry`
 * (its dataset may be why it failed).
 */
export function adoptsWorkOf(run: AdoptableRun, fingerprint: string): AdoptionReason | null {
  if (run.config_fingerprint !== fingerprint || run.dataset_id === null) return null;
  if (run.paid_model !== null && HOLDING.includes(run.state)) return 'paid_model';
  const intent = run.training_intent;
  if (intent !== undefined && intent !== null && INTENDING.includes(run.state)) return 'training_intent';
  const pastUploads = run.next_action !== null && run.next_action !== 'upload_files';
  if (pastUploads && INTENDING.includes(run.state)) return 'dataset';
  return null;
}

/** What start_training knows when it decides. */
export interface SpendFacts {
  /** The newest model of the run's dataset (of its encoder, in a sweep), if any. */
  readonly newest: Pick<Model, 'id' | 'status' | 'next_action' | 'created_at'> | undefined;
  readonly run: { readonly runId: string; readonly startedAt: string };
  /** The earlier run this one resumes or adopts (config.resumeFrom). */
  readonly resumeFrom?: { readonly runId: string; readonly paidModelId?: string };
  /** The drop's other runs as its status file names them (their models). */
  readonly otherRuns: readonly Pick<RunStatus, 'run_id' | 'model_id' | 'paid_model'>[];
  /** The newer run that took the drop over, if one did. */
  readonly supersededBy: NewerRun | null | undefined;
  /** The model of another run with the same settings (siblingToAdopt), as the service shows it now. */
  readonly sibling?: { readonly runId: string; readonly model: Pick<Model, 'status' | 'next_action'> };
}

export type SpendDecision =
  /** The newest model holds a credit: adopt it; `paidBy` is the earlier run whose credit it is. */
  | { readonly act: 'adopt'; readonly paidBy?: string }
  /** The sibling's model holds a credit: adopt that one (the sibling paid for it). */
  | { readonly act: 'adopt-sibling'; readonly paidBy: string }
  /** Superseded, with nothing paid: stop before spending. */
  | { readonly act: 'stop'; readonly newer: NewerRun }
  /** May start a training (if it holds the claim and the budget has a credit). */
  | { readonly act: 'start' };

/** start_training's decision (see the module's comment). */
export function spendDecision(facts: SpendFacts): SpendDecision {
  const { newest, supersededBy } = facts;
  if (newest !== undefined && holdsCredit(newest.status, newest.next_action)) {
    const paidBy = paidByOf(facts, newest);
    return paidBy === undefined ? { act: 'adopt' } : { act: 'adopt', paidBy };
  }
  if (supersededBy !== undefined && supersededBy !== null) return { act: 'stop', newer: supersededBy };
  const sibling = facts.sibling;
  if (sibling !== undefined && holdsCredit(sibling.model.status, sibling.model.next_action)) {
    return { act: 'adopt-sibling', paidBy: sibling.runId };
  }
  return { act: 'start' };
}

/** Ended runs whose model stays this train.json's to adopt, whenever they ended. */
const SIBLINGS: readonly RunPhase[] = ['running', 'superseded', 'failed', 'interrupted'];

/**
 * The newest other run of the drop with settings `fingerprint` that started a training of
 * another dataset than `datasetId`: its run id and model id, which start_training asks the service
 * about (spendDecision adopts the model while it holds a credit). A run that succeeded counts only
 * when it ended after `run` started (this train.json was uploaded while it ran): the same
 * train.json uploaded after a run succeeded trains again, as asked. Undefined when there is none.
 * @param runs the drop's runs as its status file names them
 */
export function siblingToAdopt(
  runs: readonly Pick<
    RunStatus,
    'run_id' | 'state' | 'updated_at' | 'model_id' | 'dataset_id' | 'config_fingerprint'
  >[],
  run: { readonly runId: string; readonly startedAt: string },
  fingerprint: string,
  datasetId: string,
): { readonly runId: string; readonly modelId: string } | undefined {
  const sibling = runs.find(
    (other) =>
      other.run_id !== run.runId &&
      (SIBLINGS.includes(other.state) || mayHaveOverlappedUpload(other.updated_at, run.startedAt)) &&
      other.config_fingerprint === fingerprint &&
      other.model_id !== null &&
      other.dataset_id !== datasetId,
  );
  return sibling?.model_id == null ? undefined : { runId: sibling.run_id, modelId: sibling.model_id };
}

/**
 * Whether a run that ended at `endedAt` may still have been running when the train.json of a run
 * started at `startedAt` came. The event's time is to the second, so the upload may be anywhere
 * in that second: a run that ended within it counts as overlapping, which spends no second credit
 * (a retrain of the same train.json uploaded within the second of a success adopts instead).
 */
function mayHaveOverlappedUpload(endedAt: string, startedAt: string): boolean {
  return Date.parse(endedAt) >= Date.parse(startedAt);
}

/**
 * The earlier run that paid for `model`: the run of the drop whose status names it, else (a run
 * resumed from one) the run resumed when the model is older than this run; undefined when it is
 * this run's own (a lost answer, a retried invocation).
 */
function paidByOf(facts: SpendFacts, model: Pick<Model, 'id' | 'created_at'>): string | undefined {
  const naming = facts.otherRuns.find(
    (other) =>
      other.run_id !== facts.run.runId && (other.model_id === model.id || other.paid_model?.id === model.id),
  );
  if (naming !== undefined) return naming.run_id;
  // The resumed run's paid model by its id; else by time (a run's start is to the second, so a
  // model created in that second is not taken for the resumed run's without its id).
  const paidEarlier =
    model.id === facts.resumeFrom?.paidModelId ||
    Date.parse(model.created_at) < Date.parse(facts.run.startedAt);
  return facts.resumeFrom !== undefined && paidEarlier ? facts.resumeFrom.runId : undefined;
}
