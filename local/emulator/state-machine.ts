/**
 * Local Step Functions: executions of the synthesized definition in aws-local-stepfunctions,
 * started by name under StartExecution's rule for a Standard workflow (a name seen before starts
 * nothing: the same input while the execution is open answers that execution, anything else is
 * ExecutionAlreadyExists; lambdas/trigger/start-execution.ts), each Task state answered by its
 * handler in-process (see lambda-invoke.ts).
 *
 * Every execution's events are drained as they happen (the interpreter queues them until read)
 * and re-emitted as `event`, which is how progress is shown; `nextStarted` waits for an execution
 * that has not started yet.
 */
// First: it polyfills Promise.withResolvers, which aws-local-stepfunctions needs on Node 20.
import { withResolvers } from './with-resolvers.js';
import { EventEmitter } from 'node:events';
import { StateMachine, type RunOptions, type StateMachineDefinition } from 'aws-local-stepfunctions';
import type { AslDefinition } from './definition.js';
import { ExecutionLimits, type ExecutionEvent, type ExecutionMeasures } from './limits.js';
import { executionArnOf } from '../../lambdas/core/state/index.js';
import {
  repeatedStartOutcome,
  withExecutionArn,
  type ExecutionInput,
  type ExecutionStarter,
  type StartOutcome,
} from '../../lambdas/trigger/start-execution.js';

/** The local state machine's ARN (ARN-shaped like the definition's placeholders; never called). */
export const LOCAL_STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:hopper-local';

export type { ExecutionEvent } from './limits.js';

type Overrides = NonNullable<RunOptions['overrides']>;
type TaskOverrides = NonNullable<Overrides['taskResourceLocalHandlers']>;

export type ExecutionOutcome =
  | { readonly status: 'SUCCEEDED'; readonly output: unknown }
  | { readonly status: 'FAILED' | 'TIMED_OUT'; readonly error: string; readonly cause: string }
  | { readonly status: 'ABORTED' };

export interface Execution {
  readonly name: string;
  readonly arn: string;
  readonly input: ExecutionInput;
  readonly startedAt: number;
  /** Its history's length and its largest state payload so far, as limits.ts counts them. */
  readonly measures: () => ExecutionMeasures;
  /** Settles when the execution ends; never rejects. */
  readonly done: Promise<ExecutionOutcome>;
}

export interface LocalStateMachineOptions {
  readonly definition: AslDefinition;
  /** What answers each Task state, by state name (see asLambda). */
  readonly tasks: Readonly<Record<string, (input: unknown) => Promise<unknown>>>;
  /** Milliseconds every Wait state sleeps instead of its own time. Default: the definition's. */
  readonly waitMs?: number;
  /** Milliseconds every Retry pauses instead of its backoff. Default: the definition's. */
  readonly retryPauseMs?: number;
}

export interface LocalStateMachineEvents {
  started: [execution: Execution];
  event: [execution: Execution, event: ExecutionEvent];
  done: [execution: Execution, outcome: ExecutionOutcome];
}

/** The definitions the interpreter has validated in this process, by their JSON text. */
const validated = new Set<string>();

/**
 * The interpreter's machine of `definition`, which it validates (asl-validator) the first time
 * this process sees that definition only: the validator compiles its JSON schemas anew for each
 * machine, about 0.1 s of CPU, and a process starts many machines of one definition (local mode
 * after each restart, every test of a file). Hopper's ASL type is looser than the interpreter's.
 */
function interpreterOf(definition: LocalStateMachineOptions['definition']): StateMachine {
  const text = JSON.stringify(definition);
  const machine = new StateMachine(definition as unknown as StateMachineDefinition, {
    validationOptions: { noValidate: validated.has(text) },
  });
  validated.add(text);
  return machine;
}

export class LocalStateMachine extends EventEmitter<LocalStateMachineEvents> implements ExecutionStarter {
  readonly #machine: StateMachine;
  readonly #overrides: Overrides;
  readonly #tasks: LocalStateMachineOptions['tasks'];
  /** Each Task's ResultPath slot (`$.dataset` -> `dataset`): where its result lands in its output. */
  readonly #slots: ReadonlyMap<string, string>;
  readonly #executions = new Map<string, Execution>();
  /** The aborts of the open executions, by name: an execution leaves when it closes. */
  readonly #aborts = new Map<string, () => void>();
  /** Each execution's input as StartExecution compares it: its JSON text. */
  readonly #inputTexts = new Map<string, string>();

  constructor(options: LocalStateMachineOptions) {
    super();
    // Every open execution and every command waiting on one listens here: hundreds at once in
    // the scale tests, by design, not a leak.
    this.setMaxListeners(0);
    this.#machine = interpreterOf(options.definition);
    const states = Object.entries(options.definition.States);
    const named = (type: string, ms: number | undefined): Record<string, number> | undefined =>
      ms === undefined
        ? undefined
        : Object.fromEntries(states.filter(([, state]) => state.Type === type).map(([name]) => [name, ms]));
    this.#tasks = options.tasks;
    this.#slots = new Map(
      states.flatMap(([name, state]) =>
        typeof state.ResultPath === 'string' ? [[name, state.ResultPath.replace(/^\$\./, '')] as const] : [],
      ),
    );
    this.#overrides = {
      waitTimeOverrides: named('Wait', options.waitMs),
      retryIntervalOverrides: named('Task', options.retryPauseMs),
    };
  }

  /**
   * The trigger's StartExecution: `given` with the execution's ARN added as `run.executionArn`
   * (as sfnExecutionStarter sends it), started by startExecution.
   */
  start(name: string, given: ExecutionInput): Promise<StartOutcome> {
    return Promise.resolve(this.startExecution(name, withExecutionArn(given, LOCAL_STATE_MACHINE_ARN, name)));
  }

  /**
   * StartExecution of `input` as it is. A name seen before starts nothing: while that execution
   * is open and its input is the same JSON text, the answer is that execution (as Step Functions
   * answers an idempotent start); otherwise (other input, or closed) it is already_exists.
   * @param inputText the input as the request sent it (Step Functions compares the text itself)
   */
  startExecution(name: string, input: ExecutionInput, inputText = JSON.stringify(input)): StartOutcome {
    const existing = this.#executions.get(name);
    if (existing !== undefined) {
      const known = {
        executionArn: existing.arn,
        startDate: new Date(existing.startedAt),
        inputText: this.#inputTexts.get(name) ?? '',
        open: this.#aborts.has(name),
      };
      return repeatedStartOutcome(known, inputText);
    }
    const arn = executionArnOf(LOCAL_STATE_MACHINE_ARN, name);
    let stop = (): void => undefined;
    const limits = new ExecutionLimits(() => {
      stop();
    });
    const run = this.#machine.run(input as unknown as Parameters<StateMachine['run']>[0], {
      overrides: { ...this.#overrides, taskResourceLocalHandlers: this.#limitedTasks(limits) },
      context: { Execution: { Name: name, Id: arn } },
    });
    stop = run.abort;
    const { promise: done, resolve } = withResolvers<ExecutionOutcome>();
    const execution: Execution = {
      name,
      arn,
      input,
      startedAt: Date.now(),
      measures: () => limits.measures,
      done,
    };
    this.#executions.set(name, execution);
    this.#inputTexts.set(name, inputText);
    this.#aborts.set(name, run.abort);
    this.emit('started', execution);
    void this.#follow(execution, run, limits, resolve);
    return { outcome: 'running', executionArn: arn, startDate: new Date(execution.startedAt) };
  }

  execution(name: string): Execution | undefined {
    return this.#executions.get(name);
  }

  executions(): Execution[] {
    return [...this.#executions.values()];
  }

  /**
   * The next execution to start that `matches`. `onEvent` hears every event of that execution
   * from its first: it is attached as the execution starts, before any event is emitted.
   * Rejects when `signal` aborts first (with its reason, or an error naming `waitingFor`).
   */
  async nextStarted(
    matches: (execution: Execution) => boolean,
    options: {
      signal?: AbortSignal | undefined;
      onEvent?: (event: ExecutionEvent) => void;
      waitingFor?: string;
    } = {},
  ): Promise<Execution> {
    const { signal, onEvent, waitingFor = 'an execution' } = options;
    return new Promise<Execution>((resolve, reject) => {
      const onStarted = (execution: Execution): void => {
        if (!matches(execution)) return;
        cleanup();
        if (onEvent !== undefined) {
          const forward = (source: Execution, event: ExecutionEvent): void => {
            if (source === execution) onEvent(event);
          };
          this.on('event', forward);
          // `done` settles after the execution's last event.
          void execution.done.then(() => this.off('event', forward));
        }
        resolve(execution);
      };
      const onAbort = (): void => {
        cleanup();
        reject(
          signal?.reason instanceof Error ? signal.reason : new Error(`stopped waiting for ${waitingFor}`),
        );
      };
      const cleanup = (): void => {
        this.off('started', onStarted);
        signal?.removeEventListener('abort', onAbort);
      };
      this.on('started', onStarted);
      if (signal?.aborted === true) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Aborts every running execution (as StopExecution would) and waits until they have ended. */
  async stopAll(): Promise<void> {
    for (const abort of this.#aborts.values()) abort();
    await Promise.all([...this.#executions.values()].map((execution) => execution.done));
  }

  /**
   * The Tasks of one execution under Step Functions' payload limit: a Task whose input (the output
   * before it) or output is too large is not run further, and the execution fails (limits.ts).
   */
  #limitedTasks(limits: ExecutionLimits): TaskOverrides {
    const limited: Record<string, (input: unknown) => Promise<unknown>> = {};
    for (const [name, task] of Object.entries(this.#tasks)) {
      const slot = this.#slots.get(name);
      limited[name] = async (input) => {
        // Never settles once a limit is passed: the abort ends the execution instead.
        if (!limits.payload(`the input of ${name}`, input)) return new Promise(() => undefined);
        const result = await task(input);
        const output = slot === undefined ? result : { ...(input as object), [slot]: result };
        if (!limits.payload(`the output of ${name}`, output)) return new Promise(() => undefined);
        return result;
      };
    }
    return limited as unknown as TaskOverrides;
  }

  async #follow(
    execution: Execution,
    run: ReturnType<StateMachine['run']>,
    limits: ExecutionLimits,
    resolve: (outcome: ExecutionOutcome) => void,
  ): Promise<void> {
    const drained = (async () => {
      for await (const event of run.eventLogs) {
        limits.event(event);
        this.emit('event', execution, event);
      }
    })();
    let outcome: ExecutionOutcome;
    try {
      // An abort rejects with ExecutionAbortedError (see failureOf): null is an output like any other.
      outcome = { status: 'SUCCEEDED', output: await run.result };
    } catch (error) {
      outcome = failureOf(error);
    }
    await drained.catch(() => undefined);
    // A limit passed ends the execution by an abort: it failed, with the limit's error.
    const breach = limits.failure;
    if (breach !== undefined) outcome = { status: 'FAILED', ...breach };
    this.#aborts.delete(execution.name);
    this.emit('done', execution, outcome);
    resolve(outcome);
  }
}

/**
 * The execution's error and cause as Step Functions would report them: the interpreter wraps
 * the failing state's error (a Fail state's Error and Cause, or a Task's error) in an
 * ExecutionError whose `cause` it is.
 */
function failureOf(error: unknown): ExecutionOutcome {
  const inner = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  if (inner instanceof Error) {
    if (inner.name === 'ExecutionAbortedError') return { status: 'ABORTED' };
    // Past the definition's TimeoutSeconds: Step Functions' own error for it.
    if (inner.name === 'ExecutionTimeoutError')
      return {
        status: 'TIMED_OUT',
        error: 'States.Timeout',
        cause: 'the execution ran past its TimeoutSeconds',
      };
    return { status: 'FAILED', error: inner.name, cause: inner.message };
  }
  return { status: 'FAILED', error: 'States.Runtime', cause: String(inner) };
}
