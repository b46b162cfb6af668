/**
 * The one shape every Task handler has: parse the state, run the step's domain function, write
 * the status, return the step's slot. Errors leave as RunErrors (see errors.ts), so the state
 * machine's Retry and Catch can tell transient from final.
 */
import { z } from 'zod';
import { RunError } from './errors.js';
import { toRunError } from './error-mapping.js';
import { runtimeFromEnvironment, type Runtime } from './runtime.js';
import type { RunState, SlotName } from './state.js';
import { statusOf, writeStatus } from './status.js';

/** The part of Lambda's context a step uses; local mode supplies the same. */
export interface InvocationContext {
  getRemainingTimeInMillis(): number;
  readonly awsRequestId: string;
}

export interface StepEnv {
  readonly runtime: Runtime;
  /** Milliseconds left before this invocation is cut off. */
  remainingMs(): number;
  readonly requestId: string;
}

export type SlotValue<S extends SlotName> = NonNullable<RunState[S]>;

export interface Step<S extends SlotName> {
  /** Hopper's name for the action, written to the status file (`upload_files`, ...). */
  readonly stage: string;
  /** Where the definition puts the result (`ResultPath: $.<slot>`). */
  readonly slot: S;
  run(state: RunState, env: StepEnv): Promise<SlotValue<S>>;
  /** False for the report step, which writes the final status itself. Default true. */
  readonly writesStatus?: boolean;
}

export type TaskHandler<S extends SlotName> = ((
  event: unknown,
  context: InvocationContext,
) => Promise<SlotValue<S>>) & {
  /** The same handler over another runtime (local mode, tests). */
  withRuntime(runtime: Runtime): (event: unknown, context: InvocationContext) => Promise<SlotValue<S>>;
};

export function stepHandler<S extends SlotName>(step: Step<S>): TaskHandler<S> {
  const bound = (runtime: () => Runtime) => (event: unknown, context: InvocationContext) =>
    invoke(step, runtime(), event, context);
  return Object.assign(
    bound(() => runtimeFromEnvironment()),
    { withRuntime: (runtime: Runtime) => bound(() => runtime) },
  );
}

async function invoke<S extends SlotName>(
  step: Step<S>,
  runtime: Runtime,
  event: unknown,
  context: InvocationContext,
): Promise<SlotValue<S>> {
  const state = parseState(event);
  const logger = runtime.logger;
  const started = Date.now();
  logger.appendKeys({ run_id: state.run.runId, drop: state.run.drop, stage: step.stage });
  try {
    const env: StepEnv = {
      runtime,
      remainingMs: () => context.getRemainingTimeInMillis(),
      requestId: context.awsRequestId,
    };
    const slot = await step.run(state, env).catch((error: unknown) => {
      throw toRunError(error);
    });
    if (step.writesStatus !== false) {
      const next = { ...state, [step.slot]: slot };
      await writeStatus(
        runtime.s3,
        state.run.bucket,
        statusOf(next, { stage: step.stage }, runtime.now()),
      ).catch((error: unknown) => {
        throw toRunError(error);
      });
    }
    logger.info('step done', { ms: Date.now() - started });
    return slot;
  } catch (error) {
    const failure = error instanceof RunError ? error : toRunError(error);
    logger.warn('step failed', { code: failure.code, retryable: failure.retryable, message: failure.detail });
    throw failure;
  } finally {
    logger.removeKeys(['run_id', 'drop', 'stage']);
  }
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
