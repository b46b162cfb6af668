/**
 * What a run has used so far, and what that cost: the `summary` of status/<drop>.json and
 * model.json (docs/operations.md, "Cost figures in model.json and how they are computed").
 *
 * The state machine passes the whole state into every Task but keeps only the Task's slot, so a
 * Task cannot add to a counter in the state. The status file can: the handler wrapper reads it
 * when an invocation starts and rewrites it when the invocation ends, so each invocation adds
 * its own usage to the summary it found (`addInvocation`). What is counted:
 * - Lambda: every invocation that got as far as the wrapper, its wall time and the function's
 *   memory (GB-seconds). The trigger and invocations Lambda cut off at their timeout are not seen.
 * - S3: every request the step's S3 client sent, per attempt, by price class (s3-requests.ts),
 *   and the GET and PUT of the status write that ends the invocation.
 * - Step Functions: state transitions estimated from the invocations (TRANSITIONS_AFTER below).
 * - The service: each model of the run as last seen, with its gpu_usd and jev_usd.
 */
import { keepsCredit, type ModelStatus } from '../../service-client/contract.js';
import { PRICES_AS_OF, PRICES_REGION, PRICES_USD } from './prices.js';
import { copyWaitOf, type RunState } from '../../core/state/state.js';
import type { StepName } from '../../core/state/vocabulary.js';

/** S3 requests by price class: `put` (PUT, COPY, POST, LIST), `get` (GET, HEAD, the rest). */
export interface S3Requests {
  readonly put: number;
  readonly get: number;
}

/** One step (Task) of the run: its Lambda invocations, failed ones included, and their time. */
export interface StepUsage {
  readonly invocations: number;
  /** Invocations that ended in an error (retried, or caught to the report). */
  readonly failed: number;
  /** Wall time of all its invocations, milliseconds. */
  readonly ms: number;
  readonly gb_seconds: number;
}

/** A training of the run as last seen: failed and refunded ones return their credit. */
export interface TrainingUsage {
  readonly model_id: string;
  readonly status: ModelStatus;
  /** The earlier run that paid for this training, which this run adopted: its credit is that run's. */
  readonly paid_by?: string;
  readonly gpu_usd: number | null;
  readonly jev_usd: number | null;
}

export interface RunSummary {
  /** Trainings of the dataset started so far, failed ones included. */
  readonly attempts: number;
  /** Credits the run's trainings hold: one per training that did not fail. */
  readonly credits: number;
  /** The service's figures, summed over the run's trainings (null while none reports one). */
  readonly gpu_usd: number | null;
  readonly jev_usd: number | null;
  readonly trainings: readonly TrainingUsage[];
  /** By Hopper's step name (`upload_files`, ...; StepName). */
  readonly steps: Readonly<Record<string, StepUsage>>;
  readonly lambda_invocations: number;
  readonly lambda_gb_seconds: number;
  /** Estimated: see TRANSITIONS_AFTER. */
  readonly state_transitions: number;
  readonly s3_requests: S3Requests;
  /** Estimated AWS cost of the run so far at list prices (lambdas/records/status/prices.ts). */
  readonly aws_usd: {
    readonly step_functions: number;
    readonly lambda: number;
    readonly s3: number;
    readonly total: number;
  };
  readonly prices: { readonly region: string; readonly as_of: string };
}

/**
 * State transitions a successful invocation of each step accounts for: the Task itself, the
 * Wait before a poll, and the Choice after it (infra/state-machine.ts). A failed invocation
 * accounts for 1 (its Task; a retry enters the Task again). The report adds RunSucceeded and the
 * final Succeed or Fail, and the Pass state that stopped the run, if one did; a model at `retry`
 * adds the AttemptsLeft choice; a copy put off adds the WaitToCopy after its ModelCopied choice. test/local/usage.test.ts checks this against the states a local
 * run enters.
 */
export const TRANSITIONS_AFTER: Readonly<Record<StepName, number>> = {
  validate_drop: 1,
  create_dataset: 2,
  upload_files: 2,
  structure: 2,
  pick_decisions: 2,
  label_examples: 2,
  poll_dataset: 3,
  start_training: 2,
  poll_model: 3,
  copy_model: 2,
  report: 3,
};

/** One invocation, as the wrapper measured it. */
export interface InvocationUsage {
  readonly step: StepName;
  readonly ok: boolean;
  readonly ms: number;
  readonly memoryMb: number;
  readonly s3: S3Requests;
}

/**
 * The summary after one more invocation.
 * @param previous the summary the status file held for this run, or null for its first
 * @param state the run's state after the invocation (its slots as the invocation left them)
 */
export function addInvocation(
  previous: RunSummary | null,
  invocation: InvocationUsage,
  state: RunState,
): RunSummary {
  const before = previous?.steps[invocation.step];
  const gbSeconds = (invocation.memoryMb / 1024) * (invocation.ms / 1000);
  const steps = {
    ...previous?.steps,
    [invocation.step]: {
      invocations: (before?.invocations ?? 0) + 1,
      failed: (before?.failed ?? 0) + (invocation.ok ? 0 : 1),
      ms: (before?.ms ?? 0) + invocation.ms,
      gb_seconds: round((before?.gb_seconds ?? 0) + gbSeconds, 6),
    },
  };
  const s3 = {
    put: (previous?.s3_requests.put ?? 0) + invocation.s3.put,
    get: (previous?.s3_requests.get ?? 0) + invocation.s3.get,
  };
  const transitions =
    (previous?.state_transitions ?? 0) + (invocation.ok ? transitionsAfter(invocation.step, state) : 1);
  return summaryOf(state, steps, s3, transitions, trainingsOf(previous?.trainings ?? [], state));
}

function transitionsAfter(step: StepName, state: RunState): number {
  let count = TRANSITIONS_AFTER[step];
  if (step === 'report' && state.stop !== undefined) count += 1;
  if ((step === 'start_training' || step === 'poll_model') && state.model?.nextAction === 'retry') count += 1;
  if (step === 'copy_model' && copyWaitOf(state.copy) !== undefined) count += 1;
  return count;
}

function trainingsOf(previous: readonly TrainingUsage[], state: RunState): TrainingUsage[] {
  const model = state.model;
  if (model === undefined) return [...previous];
  const seen: TrainingUsage = {
    model_id: model.id,
    status: model.status,
    ...(model.paidBy === undefined ? {} : { paid_by: model.paidBy }),
    gpu_usd: model.gpuUsd ?? null,
    jev_usd: model.jevUsd ?? null,
  };
  const known = previous.some((training) => training.model_id === model.id);
  if (!known) return [...previous, seen];
  return previous.map((training) => (training.model_id === model.id ? seen : training));
}

function summaryOf(
  state: RunState,
  steps: Readonly<Record<string, StepUsage>>,
  s3: S3Requests,
  transitions: number,
  trainings: readonly TrainingUsage[],
): RunSummary {
  const gbSeconds = Object.values(steps).reduce((sum, step) => sum + step.gb_seconds, 0);
  const summary = {
    attempts: state.model?.attempts ?? 0,
    credits: creditsOf(trainings),
    gpu_usd: sumOf(trainings.map((training) => training.gpu_usd)),
    jev_usd: sumOf(trainings.map((training) => training.jev_usd)),
    trainings,
    steps,
    lambda_invocations: Object.values(steps).reduce((sum, step) => sum + step.invocations, 0),
    lambda_gb_seconds: round(gbSeconds, 6),
    state_transitions: transitions,
    s3_requests: s3,
  };
  return { ...summary, aws_usd: awsUsdOf(summary), prices: { region: PRICES_REGION, as_of: PRICES_AS_OF } };
}

/** The credits `trainings` hold: those that kept theirs and that no earlier run paid for. */
function creditsOf(trainings: readonly TrainingUsage[]): number {
  return trainings.filter((training) => keepsCredit(training.status) && training.paid_by === undefined)
    .length;
}

/**
 * `summary` with one more training of the run, found at the service after the run stopped
 * (local mode's restart, for a start whose answer the stop cut off): its credit counts.
 */
export function withTraining(summary: RunSummary, training: TrainingUsage): RunSummary {
  const trainings = [...summary.trainings.filter((known) => known.model_id !== training.model_id), training];
  return {
    ...summary,
    attempts: Math.max(summary.attempts, trainings.length),
    trainings,
    credits: creditsOf(trainings),
  };
}

/** AWS usage as a run's summary counts it. */
export type AwsUsage = Pick<
  RunSummary,
  'lambda_invocations' | 'lambda_gb_seconds' | 'state_transitions' | 's3_requests'
>;

/** What `usage` costs at the list prices of prices.ts: the one place usage is priced. */
export function awsUsdOf(usage: AwsUsage): RunSummary['aws_usd'] {
  const { put, get } = usage.s3_requests;
  const sfn = usage.state_transitions * PRICES_USD.stepFunctionsTransition;
  const lambda =
    usage.lambda_gb_seconds * PRICES_USD.lambdaGbSecondArm +
    usage.lambda_invocations * PRICES_USD.lambdaRequest;
  const s3 = put * PRICES_USD.s3PutRequest + get * PRICES_USD.s3GetRequest;
  return { step_functions: usd(sfn), lambda: usd(lambda), s3: usd(s3), total: usd(sfn + lambda + s3) };
}

/**
 * The AWS usage of a typical run of a drop of `files` data files, for `hopper check`: one that
 * trains at its first attempt, as this module counted local runs of 1, 100, 500 and 1,000 small
 * files (docs/spending.md): 11 Lambda invocations, 26 state transitions, 20 S3 PUTs, 20 GETs and
 * 0.15 GB-seconds, and for each data file one GET and 0.01 GB-seconds (upload_files, 1,024 MB,
 * reads it from S3 and sends it to the service, 8 at a time). An estimate: slower polls, retries,
 * labels and large files add to it.
 */
export function typicalRunUsage(files: number): AwsUsage {
  return {
    lambda_invocations: 11,
    lambda_gb_seconds: round(0.15 + 0.01 * files, 6),
    state_transitions: 26,
    s3_requests: { put: 20, get: 20 + files },
  };
}

function sumOf(values: readonly (number | null)[]): number | null {
  const known = values.filter((value): value is number => value !== null);
  return known.length === 0
    ? null
    : round(
        known.reduce((sum, value) => sum + value, 0),
        6,
      );
}

/** Dollars to 1e-8: enough for a fraction of one Lambda request. */
function usd(value: number): number {
  return round(value, 8);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
