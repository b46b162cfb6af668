/**
 * The state machine's definition (JSONPath; local mode runs the same definition and its
 * interpreter has no JSONata). After every service call a Choice routes on the record's
 * next_action, so the console graph shows where a run stands:
 *
 *   ValidateDrop -> CreateDataset -> RouteDataset
 *   RouteDataset on $.dataset.nextAction:
 *     upload_files -> UploadFiles -> RouteDataset         wait -> WaitForDataset -> PollDataset -> RouteDataset
 *     structure -> Structure -> RouteDataset              pick_decisions -> PickDecisions -> RouteDataset
 *     label_examples -> LabelExamples -> RouteDataset     start_training | retry -> StartTraining -> RouteModel
 *     start_over -> DatasetUnreadable -> Report           expired -> DatasetExpired -> Report
 *     anything else -> UnexpectedNextAction -> Report
 *   RouteModel on $.model.nextAction:
 *     wait -> WaitForModel -> PollModel -> RouteModel     download -> CopyModel -> ModelCopied
 *     retry -> AttemptsLeft: a retry left or a sweep's next encoder -> StartTraining, else AttemptsExhausted
 *     none -> ModelFilesGone -> Report                    anything else -> UnexpectedNextAction
 *   ModelCopied: a copy put off ($.copy.waitSeconds) -> WaitToCopy -> CopyModel,
 *     a sweep's next encoder -> StartTraining, else Report
 *   (the model slot says both: `retryLeft` and `nextEncoder`, lambdas/core/state/sweep.ts)
 *   Report -> RunSucceeded: outcome "succeeded" -> Succeeded, else RunFailed (the report's error)
 *
 * Every Task: the whole state in, its slot out at $.<slot>; TimeoutSeconds; Retry of transient
 * errors with backoff and full jitter; Catch of everything to Report (Report's own to ReportFailed).
 */
import { Duration } from 'aws-cdk-lib';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import {
  Choice,
  Condition,
  Fail,
  JitterType,
  Pass,
  Result,
  Succeed,
  Timeout,
  Wait,
  WaitTime,
  type IChainable,
  type RetryProps,
  type INextable,
  type State,
} from 'aws-cdk-lib/aws-stepfunctions';
import { LambdaInvoke } from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import type { RetrierSettings } from '../lambdas/runtime/index.js';
import { STOPS, type StopName } from '../lambdas/core/state/index.js';
import type { NextAction } from '../lambdas/service-client/contract.js';
import { TASK_RETRIERS, taskNamed, taskTimeoutSeconds, type TaskName, type TaskSpec } from './tasks.js';

/**
 * Where a Choice sends each next_action of its record: a state, or `unexpected` for a value the
 * service should never give that record (UnexpectedNextAction). A Record over every NextAction,
 * so a new value in the contract does not compile until both routes say where it goes.
 */
type Routes = Readonly<Record<NextAction, IChainable | 'unexpected'>>;

/** What each Task state invokes: a published version of the Task's function (infra/constructs/pipeline.ts). */
export type TaskFunctions = Readonly<Record<TaskName, IFunction>>;

/** Builds the definition's states under `scope` (one construct per state, named as the state). */
export function buildDefinition(scope: Construct, functions: TaskFunctions): IChainable {
  const flow = flowOf(scope, functions);
  const routeDataset = datasetStates(flow, modelStates(flow));
  return flow.task('ValidateDrop').next(flow.task('CreateDataset')).next(routeDataset);
}

/**
 * The scope of the states, and how they end: `task` makes a Task state whose failure goes to
 * Report (at $.failure); `stop` a Pass state that stops the run with its code (at $.stop) and goes
 * to Report; `unexpected` is where a next_action goes that the service should never give that record.
 */
type Flow = ReturnType<typeof flowOf>;

function flowOf(parent: Construct, functions: TaskFunctions) {
  const scope = new Construct(parent, 'Flow');
  // The end: Report decides the outcome from the state; a Report that fails ends the run as is.
  const report = taskState(scope, taskNamed('Report'), functions.Report);
  report.addCatch(
    new Fail(scope, 'ReportFailed', {
      comment: 'The report step itself failed; the status file may be stale.',
      errorPath: '$.Error',
      causePath: '$.Cause',
    }),
    { errors: ['States.ALL'] },
  );
  report.next(
    new Choice(scope, 'RunSucceeded')
      .when(Condition.stringEquals('$.report.outcome', 'succeeded'), new Succeed(scope, 'Succeeded'))
      // A newer train.json of the drop took over: the run gave way, it did not fail.
      .when(
        Condition.stringEquals('$.report.outcome', 'superseded'),
        new Succeed(scope, 'Superseded', { comment: 'A newer train.json of the drop took over this run.' }),
      )
      .otherwise(
        new Fail(scope, 'RunFailed', {
          errorPath: '$.report.error.code',
          causePath: '$.report.error.message',
        }),
      ),
  );
  const task = (name: TaskName): LambdaInvoke => {
    const state = taskState(scope, taskNamed(name), functions[name]);
    state.addCatch(report, { errors: ['States.ALL'], resultPath: '$.failure' });
    return state;
  };
  const stop = (name: StopName): Pass => {
    const state = new Pass(scope, name, {
      result: Result.fromObject({ code: STOPS[name] }),
      resultPath: '$.stop',
    });
    state.next(report);
    return state;
  };
  return { scope, task, stop, report, unexpected: stop('UnexpectedNextAction') };
}

/**
 * The model: start (or adopt) a training, poll it, retry a failed one, copy the result, and in a
 * sweep go on to the next encoder. Returns StartTraining.
 */
function modelStates(flow: Flow): LambdaInvoke {
  const { scope, task, stop, report } = flow;
  const routeModel = new Choice(scope, 'RouteModel');
  const startTraining = task('StartTraining');
  startTraining.next(routeModel);
  const waitForModel = new Wait(scope, 'WaitForModel', { time: WaitTime.secondsPath('$.model.waitSeconds') });
  waitForModel.next(task('PollModel')).next(routeModel);
  // A copy that failed for a reason that may pass is put off while the files can still be there
  // (lambdas/steps/copy-model.ts): its slot then says how long to wait before copying again.
  const copyModel = task('CopyModel');
  const waitToCopy = new Wait(scope, 'WaitToCopy', { time: WaitTime.secondsPath('$.copy.waitSeconds') });
  waitToCopy.next(copyModel);
  const nextEncoder = Condition.isPresent('$.model.nextEncoder');
  copyModel.next(
    new Choice(scope, 'ModelCopied')
      .when(Condition.isPresent('$.copy.waitSeconds'), waitToCopy)
      .when(nextEncoder, startTraining)
      .otherwise(report),
  );
  route(routeModel, '$.model', flow.unexpected, {
    wait: waitForModel,
    retry: new Choice(scope, 'AttemptsLeft')
      .when(Condition.or(Condition.booleanEquals('$.model.retryLeft', true), nextEncoder), startTraining)
      .otherwise(stop('AttemptsExhausted')),
    download: copyModel,
    none: stop('ModelFilesGone'),
    upload_files: 'unexpected',
    start_over: 'unexpected',
    structure: 'unexpected',
    pick_decisions: 'unexpected',
    label_examples: 'unexpected',
    start_training: 'unexpected',
    expired: 'unexpected',
  });
  return startTraining;
}

/** The dataset: every action the service asks for, until it is ready to train. Returns RouteDataset. */
function datasetStates(flow: Flow, startTraining: LambdaInvoke): Choice {
  const { scope, task, stop } = flow;
  const routeDataset = new Choice(scope, 'RouteDataset');
  const loop = (name: TaskName): INextable & State => {
    const state = task(name);
    state.next(routeDataset);
    return state;
  };
  const waitForDataset = new Wait(scope, 'WaitForDataset', {
    time: WaitTime.secondsPath('$.dataset.waitSeconds'),
  });
  waitForDataset.next(loop('PollDataset'));
  route(routeDataset, '$.dataset', flow.unexpected, {
    upload_files: loop('UploadFiles'),
    wait: waitForDataset,
    structure: loop('Structure'),
    pick_decisions: loop('PickDecisions'),
    label_examples: loop('LabelExamples'),
    start_training: startTraining,
    retry: startTraining,
    start_over: stop('DatasetUnreadable'),
    expired: stop('DatasetExpired'),
    download: 'unexpected',
    none: 'unexpected',
  });
  return routeDataset;
}

/**
 * Adds a rule per target state to `choice`, in the table's order, matching every next_action that
 * goes there; anything else (a value of the wrong record, a missing slot) goes to `unexpected`.
 */
function route(choice: Choice, slot: '$.dataset' | '$.model', unexpected: IChainable, routes: Routes): void {
  const targets = new Map<IChainable, NextAction[]>();
  for (const [action, target] of Object.entries(routes) as [NextAction, IChainable | 'unexpected'][]) {
    if (target === 'unexpected') continue;
    targets.set(target, [...(targets.get(target) ?? []), action]);
  }
  for (const [target, actions] of targets) {
    const conditions = actions.map((action) => Condition.stringEquals(`${slot}.nextAction`, action));
    choice.when(conditions.length === 1 ? (conditions[0] as Condition) : Condition.or(...conditions), target);
  }
  choice.otherwise(unexpected);
}

/**
 * A Lambda Task invoked with the version's ARN as Resource (payloadResponseOnly): the handler gets
 * the whole state and its return value is the result, which is what local mode's in-process
 * handlers do too.
 */
function taskState(scope: Construct, spec: TaskSpec, fn: IFunction): LambdaInvoke {
  const state = new LambdaInvoke(scope, spec.name, {
    lambdaFunction: fn,
    payloadResponseOnly: true,
    resultPath: `$.${spec.slot}`,
    retryOnServiceExceptions: false, // replaced by the Retry below, with full jitter
    taskTimeout: Timeout.duration(Duration.seconds(taskTimeoutSeconds(spec))),
    comment: spec.description,
  });
  // Few retries: each invocation already retried within its client budget, and both layers
  // together are bounded (lambdas/runtime/retry-budget.ts): a run against a service that does not
  // answer ends with service_unavailable rather than sit in one step.
  for (const { errors, settings } of TASK_RETRIERS)
    state.addRetry({ errors: [...errors], ...retryProps(settings) });
  return state;
}

function retryProps(retrier: RetrierSettings): Omit<RetryProps, 'errors'> {
  return {
    interval: Duration.seconds(retrier.intervalSeconds),
    backoffRate: retrier.backoffRate,
    maxAttempts: retrier.maxAttempts,
    ...(retrier.maxDelaySeconds === undefined ? {} : { maxDelay: Duration.seconds(retrier.maxDelaySeconds) }),
    jitterStrategy: JitterType.FULL,
  };
}
