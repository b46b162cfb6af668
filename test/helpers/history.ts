/**
 * The size of an execution's history as Step Functions would keep it, counted from local mode's
 * event log of the execution (the interpreter's). A Standard workflow's history holds at most
 * 25,000 events; past that the execution fails (States.Runtime), so long runs (many held-out
 * labels, days of polling) are measured against it (test/reliability/long-run.test.ts,
 * docs/reliability.md).
 *
 * The interpreter logs fewer, coarser events than Step Functions records. What Step Functions
 * records for each (a Lambda Task given by its function ARN, as Hopper's Tasks are):
 *
 *   ExecutionStarted / Succeeded / Failed / Aborted      1 each
 *   a state entered, a state exited                      1 each (<Type>StateEntered, ...Exited)
 *   each attempt of a Task                               3 (LambdaFunctionScheduled, Started,
 *                                                           and Succeeded, Failed or TimedOut)
 *   a retry, a catch, a Fail state's failure             nothing of their own
 *
 * The interpreter logs the first attempt of a Task with its StateEntered and each further one
 * as a StateRetried; a failed attempt's StateFailed is the outcome already counted with it.
 */
import type { ExecutionEvent } from '../../local/emulator/state-machine.js';

/** A Standard workflow's most history events (Step Functions quotas). */
export const HISTORY_EVENT_LIMIT = 25_000;

/** Scheduled, started, and its outcome. */
export const TASK_ATTEMPT_EVENTS = 3;

/** The history events Step Functions records for what the local event `event` stands for. */
export function historyEventsOf(event: ExecutionEvent): number {
  switch (event.type) {
    case 'StateEntered':
      return event.state.type === 'Task' ? 1 + TASK_ATTEMPT_EVENTS : 1;
    case 'StateRetried':
      return TASK_ATTEMPT_EVENTS;
    case 'StateFailed':
    case 'StateCaught':
      return 0;
    default:
      // StateExited, the execution's own events, and Map/Parallel events (Hopper has none): one each.
      return 1;
  }
}
