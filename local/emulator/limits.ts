/**
 * Step Functions' quotas that aws-local-stepfunctions does not enforce, enforced for one
 * execution as AWS enforces them (Step Functions developer guide, "Step Functions service
 * quotas"): a state's input or output over 256 KiB of UTF-8 JSON fails the execution with
 * States.DataLimitExceeded, which no Catch catches; a history over 25,000 events fails it too
 * (as States.Runtime here: the quota page names no error for it). The interpreter offers no hook
 * for either, so the state machine checks every Task's input and output as it runs, and every
 * event as it is drained (state-machine.ts).
 */
import type { StateMachine } from 'aws-local-stepfunctions';

/** One entry of an execution's event log (the interpreter does not export the type). */
export type ExecutionEvent =
  ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;

/** The largest input or output of a state, in bytes of its JSON text. */
export const MAX_PAYLOAD_BYTES = 262_144;
/** The most events an execution's history holds. */
export const MAX_HISTORY_EVENTS = 25_000;
export const DATA_LIMIT_EXCEEDED = 'States.DataLimitExceeded';
export const HISTORY_LIMIT_ERROR = 'States.Runtime';

/** Bytes of `value` as Step Functions measures a payload: its JSON text in UTF-8. */
export function payloadBytes(value: unknown): number {
  // A state never holds undefined (JSON.stringify would give no text): it holds null.
  return Buffer.byteLength(JSON.stringify(value === undefined ? null : value), 'utf8');
}

/**
 * The events of AWS's history one interpreter event stands for. A Lambda Task is TaskStateEntered,
 * LambdaFunctionScheduled, LambdaFunctionStarted, then LambdaFunctionSucceeded and TaskStateExited;
 * an attempt that fails is LambdaFunctionFailed (the interpreter's StateFailed), then a retry's
 * Scheduled and Started again (StateRetried) or, caught, TaskStateExited (StateCaught); every
 * other state is its Entered and Exited.
 */
export function historyEventsOf(event: ExecutionEvent): number {
  if (!('state' in event)) return 1;
  const task = event.state.type === 'Task';
  switch (event.type) {
    case 'StateEntered':
      return task ? 3 : 1;
    case 'StateExited':
      return task ? 2 : 1;
    case 'StateRetried':
      return 2;
    default:
      return 1;
  }
}

export interface LimitFailure {
  readonly error: string;
  readonly cause: string;
}

/** How close an execution came to the limits so far. */
export interface ExecutionMeasures {
  /** The events of its history, as Step Functions would count them. */
  readonly historyEvents: number;
  /** The largest input or output of any of its states, in bytes. */
  readonly largestPayloadBytes: number;
}

/** One execution's count of history events and check of payloads; `stop` ends it at the first breach. */
export class ExecutionLimits {
  #events = 0;
  #largestPayload = 0;
  #failure: LimitFailure | undefined;

  constructor(private readonly stop: () => void) {}

  /** How close the execution came to the limits so far (tests show a run stays inside). */
  get measures(): ExecutionMeasures {
    return { historyEvents: this.#events, largestPayloadBytes: this.#largestPayload };
  }

  /** What the execution failed with, once a limit was passed. */
  get failure(): LimitFailure | undefined {
    return this.#failure;
  }

  /** Checks `value`, the input or output (`what`) of a state; false once the execution has failed. */
  payload(what: string, value: unknown): boolean {
    const bytes = payloadBytes(value);
    this.#largestPayload = Math.max(this.#largestPayload, bytes);
    if (bytes > MAX_PAYLOAD_BYTES)
      this.#fail({
        error: DATA_LIMIT_EXCEEDED,
        cause: `${what} is ${String(bytes)} bytes, over the ${String(MAX_PAYLOAD_BYTES)} bytes a state's input or output may have`,
      });
    return this.#failure === undefined;
  }

  /** Counts `event` into the history, and checks the state data it carries. */
  event(event: ExecutionEvent): void {
    this.#events += historyEventsOf(event);
    if (this.#events > MAX_HISTORY_EVENTS)
      this.#fail({
        error: HISTORY_LIMIT_ERROR,
        cause: `the execution's history reached ${String(this.#events)} events, over the ${String(MAX_HISTORY_EVENTS)} Step Functions keeps`,
      });
    if ('state' in event) {
      this.payload(`the input of ${event.state.name}`, event.state.input);
      if (event.state.output !== undefined)
        this.payload(`the output of ${event.state.name}`, event.state.output);
    }
  }

  #fail(failure: LimitFailure): void {
    if (this.#failure !== undefined) return;
    this.#failure = failure;
    this.stop();
  }
}
