/** One entry of an execution's event log (the interpreter does not export the type). */
import type { StateMachine } from 'aws-local-stepfunctions';

export type ExecutionEvent =
  ReturnType<StateMachine['run']>['eventLogs'] extends AsyncGenerator<infer E> ? E : never;
