/**
 * The one shape every Task handler has: parse the state, run the step's domain function, write
 * the status, return the step's slot. Errors leave as RunErrors (see errors.ts), so the state
 * machine's Retry and Catch can tell transient from final.
 *
 * Around the step, per invocation: a child logger carrying the Lambda context (request id, cold
 * start) and the run's keys, so two overlapping invocations (local mode) never share keys; an
 * X-Ray subsegment (tracing.ts); the run's usage summary, read from the status file at the start
 * and written back with this invocation added (usage.ts); and the invocation's metrics
 * (metrics.ts).
 */
import * as z from 'zod';
import type { Logger } from '@aws-lambda-powertools/logger';
import { messageOf, RunError } from '../core/errors/errors.js';
import { toRunError } from '../core/errors/error-mapping.js';
import { goneRecordError } from '../core/errors/gone.js';
import { invalidStepInputMessage } from '../core/errors/messages.js';
import { emitInvocationMetrics } from './metrics.js';
import { DEADLINE_MARGIN_MS } from './retry-budget.js';
import {
  createRuntime,
  runtimeFromEnvironment,
  type LambdaConnections,
  type LocalRuntimeOptions,
  type Runtime,
} from './runtime.js';
import { withNeededSlots } from '../core/state/require-slot.js';
import { STEPS, type SlotOf, type StepName } from '../core/state/vocabulary.js';
import type { StateFor } from '../core/state/state.js';
import { RunInputSchema, type DatasetSlot, type RunState, type SlotName } from '../core/state/state.js';
import {
  readStatus,
  readStatusObject,
  statusOf,
  supersededEntryOf,
  writeStatus,
  type StatusObject,
} from '../records/status/status.js';
import { addInvocation, type RunSummary } from '../records/status/usage.js';
import {
  gateTraining as gateDatasetTraining,
  holdsPaidModel,
  supersededError,
  type NewerRun,
} from '../ownership/supersede.js';
import { standingOf, takenOverBy, type Standing } from '../ownership/standing.js';
import { claimContextOf, releaseTraining, type ClaimContext } from '../ownership/training-claim.js';
import { inSubsegment } from './tracing.js';
import { S3RequestMeter, withStatusWrite } from './s3-requests.js';
import { withinInvocation } from './invocation-scope.js';

/** The part of Lambda's context a step uses; local mode supplies the same. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  readonly awsRequestId: string;
  /** The function's name (local mode: the Task's state name). */
  readonly functionName?: string;
  /** The function's memory (a string in Lambda's context); its GB-seconds are counted from it. */
  readonly memoryLimitInMB?: string | number;
}

export interface StepEnv {
  readonly runtime: Runtime;
  /** Milliseconds left before this invocation is cut off. */
  remainingMs(): number;
  readonly requestId: string;
  /**
   * The run's usage summary with this invocation counted as a success that ends with `state`
   * (and its status write): what a document written now should carry. Absent outside the
   * handler wrapper (unit tests of a step).
   */
  summary?(state: RunState): RunSummary;
  /**
   * The newer run of the drop that took it over, as the status file showed when this invocation
   * started; null while this run is the newest (lambdas/ownership/supersede.ts).
   */
  readonly supersededBy?: NewerRun | null;
  /** status/<drop>.json as findRun read it (null: none); absent outside the handler wrapper. */
  readonly found?: StatusObject | null;
}

export type SlotValue<S extends SlotName> = NonNullable<RunState[S]>;

/** A step's domain function: the state with its needed slots, to the slot it writes. */
export type StepRun<N extends StepName> = (state: StateFor<N>, env: StepEnv) => Promise<SlotValue<SlotOf<N>>>;

/**
 * A step: its name (its Task, slot and needed slots are declared once, in STEPS of
 * vocabulary.ts) and its domain function. Build one with defineStep.
 */
export interface Step<N extends StepName> {
  /** Hopper's name for the step, written to the status file (`hopper_step`: `upload_files`, ...). */
  readonly name: N;
  /** Runs the step; a needed slot missing from `state` is internal_error (a broken definition). */
  run(state: RunState, env: StepEnv): Promise<SlotValue<SlotOf<N>>>;
  /** False for the report step, which writes the final status itself. Default true. */
  readonly writesStatus?: boolean;
  /**
   * True for the steps that decide themselves what a superseded run does (env.supersededBy):
   * start_training, which may find a training of its own to adopt, and the report. Any other
   * step of a superseded run that holds no credit is not taken: the run stops (`superseded`).
   */
  readonly decidesWhenSuperseded?: boolean;
}

/** The step named `name` running `run` on a state whose needed slots were checked. */
export function defineStep<N extends StepName>(
  name: N,
  run: StepRun<N>,
  options: { readonly writesStatus?: boolean; readonly decidesWhenSuperseded?: boolean } = {},
): Step<N> {
  // Async, so a missing slot rejects like any other failure of the step.
  return { name, ...options, run: async (state, env) => run(withNeededSlots(name, state), env) };
}

type Invoke<N extends StepName> = (
  event: unknown,
  context: InvocationContext,
) => Promise<SlotValue<SlotOf<N>>>;

export type TaskHandler<N extends StepName> = Invoke<N> & {
  /** The step it runs: the Task registry (infra/tasks.ts) binds it by this name. */
  readonly step: N;
  /** The same handler over another runtime (tests of the sources). */
  withRuntime(runtime: Runtime): Invoke<N>;
  /**
   * The same handler over a runtime this bundle builds from `options` (local mode, which loads
   * the bundles the stack deploys): the training service only where the entry file connects it.
   */
  withLocalRuntime(options: LocalRuntimeOptions): Invoke<N>;
};

/**
 * The Task handler of `step`. In Lambda its runtime comes from the environment with what
 * `connections` names (the training service, the event bus): the entry file passes what its
 * Task's access (infra/tasks.ts) allows, and its bundle holds nothing else.
 */
export function stepHandler<N extends StepName>(
  step: Step<N>,
  connections: LambdaConnections = {},
): TaskHandler<N> {
  const bound =
    (runtime: () => Runtime | Promise<Runtime>) => async (event: unknown, context: InvocationContext) =>
      invoke(step, await runtime(), event, context);
  return Object.assign(
    bound(() => runtimeFromEnvironment(process.env, connections)),
    {
      step: step.name,
      withRuntime: (runtime: Runtime) => bound(() => runtime),
      withLocalRuntime: ({ service, sfn, ...options }: LocalRuntimeOptions) => {
        const { executions } = connections;
        const runtime = createRuntime({
          ...options,
          ...(service === undefined ? {} : { service: connections.service?.fromOptions(service) }),
          ...(sfn === undefined || executions === undefined
            ? {}
            : { executions: (logger: Logger) => executions.fromClient(sfn, logger) }),
        });
        return bound(() => runtime);
      },
    },
  );
}

/** What one invocation carries through its stages. */
interface Invocation<N extends StepName> {
  readonly step: Step<N>;
  readonly runtime: Runtime;
  readonly context: InvocationContext;
  readonly state: RunState;
  readonly started: number;
  readonly memoryMb: number;
  readonly logger: Logger;
  readonly meter: S3RequestMeter;
  /** status/<drop>.json as the invocation found it (its status write is conditional on it). */
  readonly found: StatusObject | null;
  /** The run's usage summary before this invocation (null for its first). */
  readonly previous: RunSummary | null;
  /** Where the run stands towards its drop (ownership/standing.ts), by findRun's read. */
  readonly standing: Standing;
}

/**
 * One invocation, as a chain of named stages: find the run (its status, usage so far and any
 * newer run), gate it (a superseded run stops before its step), run the step, gate its training
 * (one credit at a time per drop), and record what it did (status, usage, metrics, log line),
 * whether it succeeded or failed. Any error leaves as one RunError (failureOf).
 */
async function invoke<N extends StepName>(
  step: Step<N>,
  runtime: Runtime,
  event: unknown,
  context: InvocationContext,
): Promise<SlotValue<SlotOf<N>>> {
  const state = parseState(event);
  const memoryMb = memoryOf(context);
  const functionName = context.functionName ?? step.name;
  const logger = invocationLogger(runtime, context, state, step.name, functionName, memoryMb);
  const meter = new S3RequestMeter();
  return withinInvocation({ logger, meter }, async () => {
    const started = Date.now();
    let invocation: Invocation<N> | undefined;
    try {
      invocation = await findRun({ step, runtime, context, state, started, memoryMb, logger, meter });
      await gateSuperseded(invocation);
      const slot = await gateTraining(invocation, await runStep(invocation));
      await record(invocation, { ...state, [STEPS[step.name].slot]: slot }, null);
      return slot;
    } catch (error) {
      const failure = await failureOf(invocation, error);
      if (invocation !== undefined) await record(invocation, state, failure);
      throw failure;
    }
  });
}

/** Reads status/<drop>.json once: the run's summary so far, and whether a newer run took over. */
async function findRun<N extends StepName>(
  partial: Omit<Invocation<N>, 'found' | 'previous' | 'standing'>,
): Promise<Invocation<N>> {
  const { run } = partial.state;
  const found = await readStatusObject(partial.runtime.s3, run.bucket, run.drop);
  const status = found?.status ?? null;
  const own = status?.run_id === run.runId ? status : supersededEntryOf(status, run.runId);
  return {
    ...partial,
    found,
    previous: own?.summary ?? null,
    standing: standingOf(status, partial.state),
  };
}

/** A run giving way to a newer train.json stops before its step (ownership/standing.ts). */
async function gateSuperseded<N extends StepName>(invocation: Invocation<N>): Promise<void> {
  const { standing, step } = invocation;
  if (standing.kind !== 'giving-way' || step.decidesWhenSuperseded === true) return;
  throw await giveWay(invocation, standing.newer);
}

/** Lets the drop's claim go, if this run held it, and says why the run stopped. */
async function giveWay<N extends StepName>(invocation: Invocation<N>, newer: NewerRun): Promise<RunError> {
  await releaseTraining(claimContext(invocation), false);
  return supersededError(invocation.state, newer, invocation.step.name);
}

/** The step itself, its service calls bound to the invocation's deadline. */
async function runStep<N extends StepName>(invocation: Invocation<N>): Promise<SlotValue<SlotOf<N>>> {
  const { step, runtime, context, state, logger, standing } = invocation;
  const env: StepEnv = {
    runtime: { ...runtime, logger, service: serviceUntilDeadline(invocation) },
    remainingMs: () => context.getRemainingTimeInMillis(),
    requestId: context.awsRequestId,
    summary: (after) => usageOf(invocation, true, after, true),
    supersededBy: takenOverBy(standing),
    found: invocation.found,
  };
  return await inSubsegment(runtime.tracer, `## ${step.name}`, { run_id: state.run.runId }, () =>
    step.run(state, env),
  );
}

/** A dataset ready to train waits while another run of the drop holds its credit (supersede.ts). */
async function gateTraining<N extends StepName>(
  invocation: Invocation<N>,
  slot: SlotValue<SlotOf<N>>,
): Promise<SlotValue<SlotOf<N>>> {
  if (STEPS[invocation.step.name].slot !== 'dataset') return slot;
  const { dataset } = invocation.state;
  const gated = await gateDatasetTraining(slot as DatasetSlot, dataset, claimContext(invocation));
  return gated as unknown as typeof slot;
}

/**
 * Whatever a stage threw, as the one RunError the invocation fails with: a record of the run
 * gone at the service names itself (gone.ts); a final failure of a run that a newer train.json
 * took over while the step ran gives way instead, unless the run holds a paid model.
 */
async function failureOf<N extends StepName>(
  invocation: Invocation<N> | undefined,
  error: unknown,
): Promise<RunError> {
  if (invocation === undefined) return toRunError(error);
  const { state, step, runtime } = invocation;
  const service = serviceUntilDeadline(invocation);
  const gone = await goneRecordError(state, step.name, error, () => service(), runtime.now());
  const failure = gone ?? toRunError(error);
  if (failure.retryable || failure.code === 'superseded' || step.decidesWhenSuperseded === true)
    return failure;
  // A run holding a paid model never gives way (standing.ts): no read needed to know it.
  if (holdsPaidModel(state)) return failure;
  const status = await readStatus(runtime.s3, state.run.bucket, state.run.drop).catch(() => null);
  const standing = standingOf(status, state);
  if (standing.kind !== 'giving-way') return failure;
  return await giveWay(invocation, standing.newer).catch(() => failure);
}

/**
 * What the invocation did: its status (a failed one rewrites the status as it stood: Lambda
 * bills it and a retry adds a transition; best effort), its usage in the run's summary, its log
 * line and metrics. The status write is conditional on the file as found: one PUT.
 */
async function record<N extends StepName>(
  invocation: Invocation<N>,
  after: RunState,
  failure: RunError | null,
): Promise<void> {
  const { step, runtime, logger, meter, state } = invocation;
  const writesStatus = step.writesStatus !== false;
  const summary = usageOf(invocation, failure === null, after, writesStatus);
  if (failure === null) {
    logger.appendKeys(idsOf(after));
    logger.info('step done', { ms: Date.now() - invocation.started });
  } else {
    // `message` is a key Powertools reserves (and drops); the error brings its cause and stack.
    const { code, retryable, detail } = failure;
    logger.warn('step failed', { code, retryable, detail, error: failure });
  }
  if (writesStatus) {
    const status = statusOf(after, { hopperStep: step.name, summary }, runtime.now());
    const write = meter.uncounted(() => writeStatus(runtime.s3, state.run.bucket, status, invocation.found));
    await write.catch((error: unknown) => {
      if (failure === null) throw toRunError(error);
      logger.warn('could not record the failed invocation in the status file', { reason: messageOf(error) });
    });
  }
  if (runtime.emitMetrics !== true) return;
  emitInvocationMetrics({
    step: step.name,
    ms: Date.now() - invocation.started,
    before: state,
    after: failure === null ? after : undefined,
    previous: invocation.previous,
    summary,
    now: runtime.now(),
  });
}

/** The run's summary with this invocation counted (and its status write, when one follows). */
function usageOf<N extends StepName>(
  invocation: Invocation<N>,
  ok: boolean,
  after: RunState,
  pendingWrite: boolean,
): RunSummary {
  const { step, started, memoryMb, meter, previous } = invocation;
  const s3 = pendingWrite ? withStatusWrite(meter.requests) : meter.requests;
  return addInvocation(previous, { step: step.name, ok, ms: Date.now() - started, memoryMb, s3 }, after);
}

/** The runtime's service, every call stopping at the invocation's deadline. */
function serviceUntilDeadline<N extends StepName>(invocation: Invocation<N>): Runtime['service'] {
  const deadline = invocationDeadline(invocation.context);
  return (options) => invocation.runtime.service({ signal: deadline, ...options });
}

function claimContext<N extends StepName>(invocation: Invocation<N>): ClaimContext {
  const { runtime, state, found } = invocation;
  return claimContextOf(runtime, state.run, found?.status ?? null, serviceUntilDeadline(invocation));
}

/**
 * A logger of this invocation alone: the Lambda context's keys as Powertools' addContext names
 * them (cold start tracked per function by the runtime, which outlives the child), and the run's.
 */
function invocationLogger(
  runtime: Runtime,
  context: InvocationContext,
  state: RunState,
  step: StepName,
  functionName: string,
  memoryMb: number,
): Logger {
  const logger = runtime.logger.createChild();
  logger.appendKeys({
    function_request_id: context.awsRequestId,
    function_name: functionName,
    function_memory_size: memoryMb,
    cold_start: runtime.coldStart?.(functionName) ?? false,
    run_id: state.run.runId,
    drop: state.run.drop,
    hopper_step: step,
    ...idsOf(state),
  });
  return logger;
}

/** The dataset and model ids, once the run has them. */
function idsOf(state: RunState): Record<string, string> {
  return {
    ...(state.dataset === undefined ? {} : { dataset_id: state.dataset.id }),
    ...(state.model === undefined ? {} : { model_id: state.model.id }),
  };
}

/**
 * Aborts DEADLINE_MARGIN_MS before Lambda would cut the invocation off: a service call still
 * running then fails as a retryable DeadlineError, and the step has time to say so.
 */
export function invocationDeadline(
  context: Pick<InvocationContext, 'getRemainingTimeInMillis'>,
): AbortSignal {
  return AbortSignal.timeout(Math.max(0, context.getRemainingTimeInMillis() - DEADLINE_MARGIN_MS));
}

function memoryOf(context: InvocationContext): number {
  const value = Number(context.memoryLimitInMB ?? process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? 0);
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** The state is what earlier steps wrote, so only its origin is checked (RunInputSchema). */
function parseState(event: unknown): RunState {
  const run = RunInputSchema.safeParse((event as { run?: unknown } | null)?.run);
  if (!run.success) throw new RunError('invalid_event', invalidStepInputMessage(z.prettifyError(run.error)));
  return { ...(event as RunState), run: run.data };
}
