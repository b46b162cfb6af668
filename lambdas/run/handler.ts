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
import { RunError } from './errors.js';
import { toRunError } from './error-mapping.js';
import { goneRecordError } from './gone.js';
import { emitInvocationMetrics } from './metrics.js';
import { DEADLINE_MARGIN_MS } from './retry-budget.js';
import {
  runtimeFromEnvironment,
  withInvocationLogger,
  type LambdaConnections,
  type Runtime,
} from './runtime.js';
import { withNeededSlots } from './require-slot.js';
import type { DatasetSlot, RunState, SlotName } from './state.js';
import {
  isNewerRun,
  readStatus,
  statusOf,
  supersededEntryOf,
  writeStatus,
  type RunStatus,
} from './status.js';
import { gateTraining, holdsCredit, newerRunOf, supersededError, type NewerRun } from './supersede.js';
import { releaseTraining } from './training-claim.js';
import { inSubsegment } from './tracing.js';
import { meterS3, S3RequestMeter, withStatusWrite } from './s3-requests.js';
import { addInvocation, isRunSummary, type RunSummary } from './usage.js';
import { STEPS, type SlotOf, type StateFor, type StepName } from './vocabulary.js';

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
   * started; null while this run is the newest (lambdas/run/supersede.ts).
   */
  readonly supersededBy?: NewerRun | null;
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

export type TaskHandler<N extends StepName> = ((
  event: unknown,
  context: InvocationContext,
) => Promise<SlotValue<SlotOf<N>>>) & {
  /** The step it runs: the Task registry (infra/tasks.ts) binds it by this name. */
  readonly step: N;
  /** The same handler over another runtime (local mode, tests). */
  withRuntime(
    runtime: Runtime,
  ): (event: unknown, context: InvocationContext) => Promise<SlotValue<SlotOf<N>>>;
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
    { step: step.name, withRuntime: (runtime: Runtime) => bound(() => runtime) },
  );
}

async function invoke<N extends StepName>(
  step: Step<N>,
  runtime: Runtime,
  event: unknown,
  context: InvocationContext,
): Promise<SlotValue<SlotOf<N>>> {
  const state = parseState(event);
  const started = Date.now();
  const functionName = context.functionName ?? step.name;
  const memoryMb = memoryOf(context);
  const logger = invocationLogger(runtime, context, state, step.name, functionName, memoryMb);
  const meter = new S3RequestMeter();
  const { bucket } = state.run;
  const writesStatus = step.writesStatus !== false;
  let previous: RunSummary | null = null;
  const usage = (ok: boolean, after: RunState, pendingWrite: boolean): RunSummary =>
    addInvocation(
      previous,
      {
        step: step.name,
        ok,
        ms: Date.now() - started,
        memoryMb,
        s3: pendingWrite ? withStatusWrite(meter.requests) : meter.requests,
      },
      after,
    );
  const metrics = (after: RunState | undefined, summary: RunSummary): void => {
    if (runtime.emitMetrics !== true) return;
    const now = runtime.now();
    emitInvocationMetrics({
      step: step.name,
      ms: Date.now() - started,
      before: state,
      after,
      previous,
      summary,
      now,
    });
  };

  return withInvocationLogger(logger, () =>
    meterS3(meter, async () => {
      try {
        const current = await readStatus(runtime.s3, bucket, state.run.drop).catch((error: unknown) => {
          throw toRunError(error);
        });
        previous = priorSummary(current, state.run.runId);
        const newer = current !== null && isNewerRun(current, state.run) ? newerRunOf(current) : null;
        // Every service call of the invocation (the step's, and the training claim's look at the
        // holder's model) stops at this deadline, leaving time to report it.
        const deadline = invocationDeadline(context);
        const claimContext = {
          s3: runtime.s3,
          run: state.run,
          now: runtime.now(),
          service: () => runtime.service({ signal: deadline }),
        };
        if (newer !== null && step.decidesWhenSuperseded !== true && !holdsCredit(state)) {
          // The run gives way before this step: it lets the drop's claim go, if it held it.
          await releaseTraining(claimContext, false).catch((error: unknown) => {
            throw toRunError(error);
          });
          throw supersededError(state, newer, step.name);
        }
        const env: StepEnv = {
          runtime: {
            ...runtime,
            logger,
            service: (options) => runtime.service({ signal: deadline, ...options }),
          },
          remainingMs: () => context.getRemainingTimeInMillis(),
          requestId: context.awsRequestId,
          summary: (after) => usage(true, after, true),
          supersededBy: newer,
        };
        const result = await inSubsegment(
          runtime.tracer,
          `## ${step.name}`,
          { run_id: state.run.runId },
          () => step.run(state, env),
        ).catch(async (error: unknown) => {
          // A dataset or model of the run gone at the service: one rule for every step.
          const gone = await goneRecordError(
            state,
            step.name,
            error,
            () => env.runtime.service(),
            runtime.now(),
          );
          throw gone ?? toRunError(error);
        });
        const slotName = STEPS[step.name].slot;
        // A dataset ready to train waits while another run of the drop holds its credit.
        const slot = (
          slotName === 'dataset'
            ? await gateTraining(result as DatasetSlot, state.dataset, claimContext).catch(
                (error: unknown) => {
                  throw toRunError(error);
                },
              )
            : result
        ) as typeof result;
        const after: RunState = { ...state, [slotName]: slot };
        // The report wrote its status itself, inside the count; the others' write is counted ahead.
        const summary = usage(true, after, writesStatus);
        if (writesStatus) {
          const status = statusOf(after, { hopperStep: step.name, summary }, runtime.now());
          await meter
            .uncounted(() => writeStatus(runtime.s3, bucket, status))
            .catch((error: unknown) => {
              throw toRunError(error);
            });
        }
        logger.appendKeys(idsOf(after));
        logger.info('step done', { ms: Date.now() - started });
        metrics(after, summary);
        return slot;
      } catch (error) {
        const failure = error instanceof RunError ? error : toRunError(error);
        // `message` is a key Powertools reserves (and drops); the error itself brings its cause
        // and stack into the line.
        logger.warn('step failed', {
          code: failure.code,
          retryable: failure.retryable,
          detail: failure.detail,
          error: failure,
        });
        const summary = usage(false, state, writesStatus);
        if (writesStatus) await recordFailedInvocation(runtime, logger, meter, state, step.name, summary);
        metrics(undefined, summary);
        throw failure;
      }
    }),
  );
}

/**
 * The run's summary so far: from its status file, or from its entry there once a newer run of
 * the drop owns the file.
 */
function priorSummary(status: RunStatus | null, runId: string): RunSummary | null {
  const summary = status?.run_id === runId ? status.summary : supersededEntryOf(status, runId)?.summary;
  return isRunSummary(summary) ? summary : null;
}

/**
 * A failed invocation still counts (Lambda bills it, a retry adds a transition): the status is
 * rewritten as it stood, with the summary. Best effort: the step's own error is what matters.
 */
async function recordFailedInvocation(
  runtime: Runtime,
  logger: Logger,
  meter: S3RequestMeter,
  state: RunState,
  step: StepName,
  summary: RunSummary,
): Promise<void> {
  const status = statusOf(state, { hopperStep: step, summary }, runtime.now());
  await meter
    .uncounted(() => writeStatus(runtime.s3, state.run.bucket, status))
    .catch((error: unknown) => {
      logger.warn('could not record the failed invocation in the status file', {
        message: error instanceof Error ? error.message : String(error),
      });
    });
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

const RunInputSchema = z.object({
  runId: z.string().min(1),
  bucket: z.string().min(1),
  drop: z.string().min(1),
  key: z.string().min(1),
  etag: z.string(),
  startedAt: z.string().min(1),
  executionArn: z.string().min(1).optional(),
});

/**
 * The state is what earlier steps wrote, so only its origin is checked; a state without a
 * valid `run` means the definition or the trigger is broken, not the user's drop.
 */
function parseState(event: unknown): RunState {
  const run = RunInputSchema.safeParse((event as { run?: unknown } | null)?.run);
  if (!run.success) {
    throw new RunError('invalid_event', `the step's input has no valid "run": ${z.prettifyError(run.error)}`);
  }
  return { ...(event as RunState), run: run.data };
}
