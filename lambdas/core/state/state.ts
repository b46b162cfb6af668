/**
 * The execution state the state machine carries from Task to Task (JSONPath). Each Task
 * receives the whole state and returns one small slot, which the definition places with
 * `ResultPath` (`$.config`, `$.dataset`, `$.model`, `$.copy`, `$.report`). Keep it small
 * (Step Functions caps a state at 256 KiB) and free of secrets: the console shows all of it.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import type { DatasetStatus, ModelStatus, NextAction } from '../../service-client/index.js';
import { modelFileKey } from '../../storage/keys.js';
import type { RunErrorCode } from '../errors/codes.js';
import type { NeedsOf, RunOutcome, SlotName, StepName, StopCode } from './vocabulary.js';

export type { SlotName };

/**
 * Where a run comes from: the execution input the trigger builds from the S3 event. Every Task
 * checks it (the handler wrapper): a state without a valid `run` means the definition or the
 * trigger is broken, not the user's drop.
 */
export const RunInputSchema = z.object({
  /** The execution name: unique per bucket, key and etag of train.json. */
  runId: z.string().min(1),
  bucket: z.string().min(1),
  /** The drop folder's name: the `<drop>` of `inbox/<drop>/train.json`. */
  drop: z.string().min(1),
  /** The train.json object that started the run, and its etag (no quotes). */
  key: z.string().min(1),
  etag: z.string(),
  startedAt: z.string().min(1),
  /** S3's `sequencer` of the event that started the run, when it carried one (run-order.ts). */
  sequencer: z.string().min(1).optional(),
  /**
   * The execution's ARN, which the Task Lambdas cannot look up (the state machine's ARN in their
   * environment would be a circular dependency): the starter adds it (lambdas/trigger/start-execution.ts).
   * Absent for an execution started by other means.
   */
  executionArn: z.string().min(1).optional(),
});
export type RunInput = Readonly<z.infer<typeof RunInputSchema>>;

/** How to treat the service's structuring questions (train.json `decisions`). */
export type Decisions = 'service' | 'suggested' | Readonly<Record<string, string>>;

/** One data file of the drop, pinned to the version that was validated. */
export interface DropFile {
  readonly name: string;
  readonly bytes: number;
  readonly etag: string;
}

/** train.json, validated and with its defaults applied ($.config). */
export interface RunConfig {
  readonly name: string;
  readonly files: readonly DropFile[];
  /** The labels file pinned like a data file, or null when the drop has none. */
  readonly labels: DropFile | null;
  /** null: the encoder the service marks `default`. */
  readonly encoder: string | null;
  readonly decisions: Decisions;
  readonly maxAttempts: number;
  /** train.json `encoders`: a sweep, one model per encoder from the one dataset (sweep.ts). */
  readonly encoders?: readonly string[] | 'all';
  /** train.json `promote`: when a new model replaces the drop's current one (lambdas/steps/lineage.ts). */
  readonly promote?: PromoteRule;
  /**
   * train.json `"resume": true`: the dataset of the drop's failed run to train from instead of
   * creating one (lambdas/ownership/resume.ts). Absent when the run starts over.
   */
  readonly resumeFrom?: ResumeFrom;
}

/**
 * The run's settings as a short digest: train.json's every field with its defaults, and every
 * file pinned by size and etag, but not `resumeFrom`. Two runs with the same digest would send
 * the same data and train the same way (lambdas/ownership/resume.ts adopts a paid model by it).
 */
export function configFingerprint(config: RunConfig): string {
  const { resumeFrom: _how, ...settings } = config;
  return createHash('sha256').update(JSON.stringify(settings)).digest('hex').slice(0, 32);
}

/** train.json `promote`: the new model must beat the current one by `min_delta` on `metric`. */
export interface PromoteRule {
  readonly metric: string;
  readonly min_delta: number;
}

/** The failed run a resuming run takes its dataset from (its status file named it). */
export interface ResumeFrom {
  readonly runId: string;
  /** '' when the run was interrupted before the service's answer named its dataset: see datasetName. */
  readonly datasetId: string;
  /**
   * The name the run gave the dataset it was creating (runDatasetName), when its dataset id is not
   * known: create_dataset looks for it at the service, asked for since `startedAt`.
   */
  readonly datasetName?: string;
  readonly startedAt?: string;
  /** The earlier run's error code, for the status and the messages. */
  readonly errorCode: string | null;
  /**
   * The model the earlier run paid for, when its status names one: StartTraining adopts it as
   * paid by that run even when it was created in the second this run's train.json came (the
   * event's time is to the second).
   */
  readonly paidModelId?: string;
  /**
   * The earlier run's settings (configFingerprint), when its status names them. A paid model of
   * other settings than this run's is adopted and copied, never stranded, but not made current:
   * it is not what this train.json asks for (lineage.ts).
   */
  readonly configFingerprint?: string;
  /**
   * Taken for its dataset alone (adoption.ts: the earlier run paid for nothing and was not about
   * to): should that dataset be past going on from, this run creates its own rather than fail.
   */
  readonly datasetOnly?: true;
}

/** How long to wait before the next poll, and how many polls came before ($.dataset, $.model). */
export interface PollSchedule {
  /** Seconds the next Wait state sleeps (its `SecondsPath`); 0 when the record is not at `wait`. */
  readonly waitSeconds: number;
  /** Consecutive polls at `wait` so far; drives the backoff. */
  readonly polls: number;
  /** Seconds slept in those consecutive waits (before this one); the interval grows with it. */
  readonly waitedSeconds: number;
  /** Polls (and copies put off) in the whole run so far; bounded with totalBatches (polling.ts). */
  readonly totalPolls: number;
  /**
   * Upload and label batches in the whole run that left their action for another batch; with
   * totalPolls, the run's rounds of its loops, bounded to stay inside Step Functions' history
   * (MAX_LOOP_ROUNDS_PER_RUN). Absent until the first such batch.
   */
  readonly totalBatches?: number;
  /** Seconds the run has slept in Wait states so far, this wait included; bounded per run. */
  readonly totalWaitSeconds: number;
}

/** The dataset as the last service call left it ($.dataset). */
export interface DatasetSlot extends PollSchedule {
  readonly id: string;
  readonly step: number;
  readonly status: DatasetStatus;
  /** Always a known value: the client refuses a record with another (unsupported_next_action). */
  readonly nextAction: NextAction;
  readonly expiresAt: string;
  readonly error: string | null;
  /** Held-out examples this run has answered so far. */
  readonly labelled: number;
  /**
   * Set while the dataset is ready to train but another run of the drop holds the drop's one
   * credit at a time (lambdas/ownership/training-claim.ts): `nextAction` is then `wait`, and the run
   * looks again after the Wait.
   */
  readonly waitingFor?: { readonly runId: string; readonly modelId: string | null };
}

/** The latest model of the run ($.model). */
export interface ModelSlot extends PollSchedule {
  readonly id: string;
  readonly step: number;
  readonly status: ModelStatus;
  readonly nextAction: NextAction;
  readonly version: number;
  readonly encoder: string;
  /** Trainings of this dataset (in a sweep, with this encoder) started so far, failed ones included. */
  readonly attempts: number;
  /** Whether a failed training may be tried again: AttemptsLeft routes on it (sweep.ts, trainingPlan). */
  readonly retryLeft: boolean;
  /** A sweep's encoders and the outcomes of those before this model's (train.json `encoders`). */
  readonly sweep?: SweepSlot;
  /** The sweep's encoder after this one: AttemptsLeft and ModelCopied go back to StartTraining for it. */
  readonly nextEncoder?: string;
  readonly filesExpireAt: string | null;
  /**
   * The shortest time the account's earlier done models kept their files (seconds), or null
   * when none showed it; it caps the poll interval (pollCeilingSeconds).
   */
  readonly filesRetentionSeconds: number | null;
  /**
   * When this training is expected to finish, from how long the account's earlier trainings
   * took; the schedule polls densely there (polling.ts). Null when none showed it.
   */
  readonly expectedFinish: ExpectedFinish | null;
  readonly onnxBytes: number | null;
  readonly error: string | null;
  /**
   * Set while polls of this paid model fail (the service unreachable or busy): when the first
   * poll in a row failed. The run waits it out until the model's files could be gone
   * (lambdas/steps/poll-model.ts); a poll that succeeds clears it.
   */
  readonly unreachableSince?: string;
  /** When the service deleted the model's files, and where it moved them, once it has. */
  readonly filesDeletedAt?: string;
  readonly hfRepo?: string;
  /** The earlier run that paid for this training, when this run adopted it (resumeFrom): no credit of its own. */
  readonly paidBy?: string;
  /** The service's cost figures for this training, once it reports them. */
  readonly gpuUsd?: number | null;
  readonly jevUsd?: number | null;
}

/** A sweep: its encoders in order, and the outcome of each before the model slot's (sweep.ts). */
export interface SweepSlot {
  readonly encoders: readonly string[];
  readonly outcomes: readonly EncoderOutcome[];
}

/** How one encoder of a sweep fared, as the status file and model.json show it (snake_case). */
export interface EncoderOutcome {
  readonly encoder: string;
  readonly outcome: 'copied' | 'failed' | 'training' | 'pending';
  readonly model_id: string | null;
  readonly attempts: number;
  readonly error: string | null;
}

/** Where the model was copied ($.copy). */
export interface CopySlot {
  readonly modelKey: string;
  readonly recordKey: string;
  readonly bytes: number;
}

/**
 * A copy put off ($.copy until the copy is done): it failed for a reason that may pass (the
 * service or S3 unreachable or busy) while the model's files can still be at the service, so
 * the run waits `waitSeconds` (WaitToCopy) and copies again (lambdas/core/schedule/files-deadline.ts);
 * or it reached its invocation's time box, and the next invocation goes on at once (`waitSeconds` 0).
 */
export interface CopyWaitSlot extends PollSchedule {
  /** When the first copy in a row failed. */
  readonly failingSince: string;
  /** The time the model's files could be gone by: the run does not wait past it. */
  readonly filesDeadline: string;
  /** Why the last copy failed, or stopped (its time box). */
  readonly reason: string;
  /**
   * The copy's multipart upload, left open: the next copy goes on with its stored parts
   * (lambdas/storage/multipart.ts), fetching the rest from the service with Range.
   */
  readonly upload?: { readonly uploadId: string; readonly partBytes: number };
}

/** The copy put off, or undefined when there is none (no copy yet, or one done). */
export function copyWaitOf(copy: CopySlot | CopyWaitSlot | undefined): CopyWaitSlot | undefined {
  return copy !== undefined && 'failingSince' in copy ? copy : undefined;
}

/** Where the model was copied, or undefined while it is not (yet). */
export function copiedModel(copy: CopySlot | CopyWaitSlot | undefined): CopySlot | undefined {
  return copy !== undefined && 'modelKey' in copy ? copy : undefined;
}

/** True when $.copy holds the copy of $.model (in a sweep it may hold an earlier encoder's). */
export function modelCopied(state: RunState): boolean {
  const copy = copiedModel(state.copy);
  return state.model !== undefined && copy?.modelKey === modelFileKey(state.run.drop, state.model.id);
}

/** A run that stopped on a next_action it cannot go on from ($.stop, set by a Pass state). */
export interface StopSlot {
  readonly code: StopCode;
}

/** What a Catch puts at $.failure: Step Functions' error name and cause. */
export interface CaughtFailure {
  readonly Error: string;
  readonly Cause?: string;
}

/** The outcome the report step decided ($.report). */
export interface ReportSlot {
  /** `superseded`: a newer train.json of the drop took over (docs/pipeline.md). */
  readonly outcome: RunOutcome;
  readonly error: RunFailure | null;
}

/** A failed run's error: the status file's `error`, the Failed event's, the execution's. */
export interface RunFailure {
  readonly code: RunErrorCode;
  readonly message: string;
}

export interface RunState {
  readonly run: RunInput;
  readonly config?: RunConfig;
  readonly dataset?: DatasetSlot;
  readonly model?: ModelSlot;
  readonly copy?: CopySlot | CopyWaitSlot;
  readonly stop?: StopSlot;
  readonly failure?: CaughtFailure;
  readonly report?: ReportSlot;
}

/** The run state step N gets: its needed slots present. */
export type StateFor<N extends StepName> = RunState & {
  readonly [K in NeedsOf<N>]-?: NonNullable<RunState[K]>;
};

/**
 * When a training is expected to finish, in seconds after it was created, from how long the
 * account's earlier trainings took: the schedule polls every few seconds inside this window.
 */
export interface ExpectedFinish {
  readonly fromSeconds: number;
  readonly toSeconds: number;
}

export interface TrainingClaim {
  /** The run that may start a training of the drop now; null once released. */
  readonly run_id: string | null;
  readonly started_at: string | null;
  readonly dataset_id: string | null;
  /** The training the run started, once it has. */
  readonly model_id: string | null;
  /** When the run last took (or confirmed) the claim. */
  readonly claimed_at: string;
}
