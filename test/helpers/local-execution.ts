/**
 * One execution of a state machine definition in aws-local-stepfunctions, for tests: Task states
 * answered by local handlers (by state name), Wait states and retry pauses cut short, and every
 * event of the execution collected. Local mode's own runner is the production counterpart.
 */
import '../../local/mode/with-resolvers.js';
import { StateMachine, type RunOptions, type StateMachineDefinition } from 'aws-local-stepfunctions';
import type { AslDefinition } from '../../infra/definition.js';

type Overrides = NonNullable<RunOptions['overrides']>;
type LocalHandlers = NonNullable<Overrides['taskResourceLocalHandlers']>;
/** One entry of the execution's event log (the interpreter does not export the type). */
export type ExecutionEvent =
  ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;

export interface LocalExecution {
  /** The execution's output, when it succeeded. */
  readonly output: unknown;
  /** The execution's error, when it failed. */
  readonly error: (Error & { cause?: Error }) | undefined;
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
  // Hopper's ASL type is looser than the interpreter's; the interpreter validates the definition.
  const machine = new StateMachine(definition as unknown as StateMachineDefinition);
  const states = Object.entries(definition.States);
  const execution = machine.run(input as Parameters<StateMachine['run']>[0], {
    overrides: {
      taskResourceLocalHandlers: handlers as unknown as LocalHandlers,
      waitTimeOverrides: Object.fromEntries(
        states.filter(([, state]) => state.Type === 'Wait').map(([name]) => [name, options.waitMs ?? 0]),
      ),
      retryIntervalOverrides: Object.fromEntries(
        states.filter(([, state]) => state.Type === 'Task').map(([name]) => [name, 0]),
      ),
    },
  });
  const events: ExecutionEvent[] = [];
  // Drained while the execution runs: the interpreter queues every event until read.
  const drained = (async () => {
    for await (const event of execution.eventLogs) events.push(event);
  })();
  let output: unknown;
  let error: LocalExecution['error'];
  try {
    output = await execution.result;
  } catch (caught) {
    error = caught as LocalExecution['error'];
  }
  await drained;
  return { output, error, events };
}
