/**
 * One execution of a state machine definition for tests, through local mode's own runner
 * (LocalStateMachine): Task states answered by the given functions (by state name), Wait states
 * and retry pauses cut short, and every event of the execution collected.
 */
import type { RunConfig, RunInput } from '../../lambdas/core/state/index.js';
import type { AslDefinition } from '../../local/emulator/definition.js';
import type { ExecutionInput } from '../../lambdas/trigger/start-execution.js';
import {
  LocalStateMachine,
  type ExecutionEvent,
  type ExecutionOutcome,
} from '../../local/emulator/state-machine.js';

export type { ExecutionEvent };

/** The run a scripted execution is given (`{ run: SCRIPTED_RUN }`): no bucket behind it. */
export const SCRIPTED_RUN: RunInput = {
  runId: 'drop-0123',
  bucket: 'bucket',
  drop: 'drop',
  key: 'inbox/drop/train.json',
  etag: 'etag',
  startedAt: '2025-01-01T00:00:00.000Z',
};

/** What a scripted ValidateDrop answers: one small file, the service's decisions, 2 attempts. */
export const SCRIPTED_CONFIG: RunConfig = {
  name: 'drop',
  files: [{ name: 'a.csv', bytes: 10, etag: 'e' }],
  labels: null,
  encoder: null,
  decisions: 'service',
  maxAttempts: 2,
};

export interface LocalExecution {
  /** The execution's output, when it succeeded. */
  readonly output: unknown;
  /** The execution's error and cause (a Fail state's, or a Task's error name), when it failed. */
  readonly error: { readonly name: string; readonly message: string } | undefined;
  readonly events: readonly ExecutionEvent[];
}

export interface LocalExecutionOptions {
  /** Milliseconds every Wait state sleeps. Default 0. */
  readonly waitMs?: number;
}

export async function executeLocally(
  definition: AslDefinition,
  input: object,
  handlers: Readonly<Record<string, (input: unknown) => unknown>>,
  options: LocalExecutionOptions = {},
): Promise<LocalExecution> {
  const tasks = Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [
      name,
      (event: unknown) => Promise.resolve().then(() => handler(event)),
    ]),
  );
  const machine = new LocalStateMachine({ definition, tasks, waitMs: options.waitMs ?? 0, retryPauseMs: 0 });
  const events: ExecutionEvent[] = [];
  machine.on('event', (_, event) => events.push(event));
  await machine.start('test-execution', input as ExecutionInput);
  const outcome = await whenDone(machine, 'test-execution');
  if (outcome.status === 'ABORTED') throw new Error('the execution was aborted');
  return outcome.status === 'SUCCEEDED'
    ? { output: outcome.output, error: undefined, events }
    : { output: undefined, error: { name: outcome.error, message: outcome.cause }, events };
}

/**
 * The outcome of the execution named `name`, which may start later (the S3 event that starts
 * it can arrive after the upload that caused it has returned). Rejects when `signal` aborts.
 */
export async function whenDone(
  machine: LocalStateMachine,
  name: string,
  signal?: AbortSignal,
): Promise<ExecutionOutcome> {
  const existing = machine.execution(name);
  if (existing !== undefined) return existing.done;
  return (await machine.nextStarted((execution) => execution.name === name, { signal, waitingFor: name }))
    .done;
}
