/**
 * The state machine definition as local mode gets it (scripts/local-definition.ts, built into
 * dist/definition.json): its shape as
 * docs/pipeline.md says, accepted by aws-local-stepfunctions, and routed as docs/pipeline.md says. The
 * routing tests run the extracted ASL with scripted Task handlers (by state name): they test the
 * definition, not the handlers.
 */
import '../../local/emulator/with-resolvers.js';
import { existsSync } from 'node:fs';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { describe, expect, it } from 'vitest';
import { PLACEHOLDER_FUNCTION_ARN_PREFIX } from '../../scripts/local-definition.js';
import { RunError, retryable } from '../../lambdas/core/errors/index.js';
import { loadLocalDefinition, type AslState } from '../../local/emulator/definition.js';
import { synthesizeLocalDefinition } from '../infra/helpers.js';
import { TASK_RETRIERS } from '../../infra/tasks.js';
import { handlerBundle } from '../../local/files.js';
import {
  executeLocally,
  SCRIPTED_CONFIG,
  SCRIPTED_RUN,
  type LocalExecution,
} from '../helpers/local-execution.js';
import { stepUnderWay } from '../../lambdas/records/status/index.js';
import { attemptsLeft, STEPS, type DatasetSlot, type ModelSlot } from '../../lambdas/core/state/index.js';
import type { NextAction } from '../../lambdas/service-client/index.js';
import { datasetSlotOf, modelSlotOf } from '../helpers/fixtures.js';

const { definition, handlers } = synthesizeLocalDefinition();
const states = definition.States;

/** Task -> ResultPath and TimeoutSeconds (Lambda timeout + 60 s), from docs/pipeline.md. */
const TASKS = {
  ValidateDrop: ['$.config', 120],
  CreateDataset: ['$.dataset', 360],
  UploadFiles: ['$.dataset', 960],
  PollDataset: ['$.dataset', 360],
  Structure: ['$.dataset', 360],
  PickDecisions: ['$.dataset', 360],
  LabelExamples: ['$.dataset', 960],
  StartTraining: ['$.model', 360],
  PollModel: ['$.model', 360],
  CopyModel: ['$.copy', 960],
  Report: ['$.report', 120],
} as const;
type TaskName = keyof typeof TASKS;
const TASK_NAMES = Object.keys(TASKS) as TaskName[];

const STOPS = {
  DatasetUnreadable: 'dataset_unreadable',
  DatasetExpired: 'dataset_expired',
  UnexpectedNextAction: 'unsupported_next_action',
  AttemptsExhausted: 'training_failed',
  ModelFilesGone: 'model_files_gone',
} as const;

function state(name: string): AslState {
  const found = states[name];
  if (found === undefined) throw new Error(`no state ${name}`);
  return found;
}

describe('the extracted definition', () => {
  it('has exactly the states docs/pipeline.md names, starting at ValidateDrop', () => {
    expect(definition.StartAt).toBe('ValidateDrop');
    const byType = (type: string) =>
      Object.entries(states)
        .filter(([, candidate]) => candidate.Type === type)
        .map(([name]) => name)
        .sort();
    expect(byType('Task')).toEqual([...TASK_NAMES].sort());
    expect(byType('Choice')).toEqual([
      'AttemptsLeft',
      'ModelCopied',
      'RouteDataset',
      'RouteModel',
      'RunSucceeded',
    ]);
    expect(byType('Wait')).toEqual(['WaitForDataset', 'WaitForModel', 'WaitToCopy']);
    expect(byType('Pass')).toEqual(Object.keys(STOPS).sort());
    expect(byType('Succeed')).toEqual(['Succeeded', 'Superseded']);
    expect(byType('Fail')).toEqual(['ReportFailed', 'RunFailed']);
  });

  it('uses JSONPath only', () => {
    const text = JSON.stringify(definition);
    expect(text).not.toMatch(/JSONata/i);
    for (const field of ['"Arguments"', '"Output"', '"Assign"', '"Condition"'])
      expect(text).not.toContain(field);
    expect(definition.QueryLanguage ?? 'JSONPath').toBe('JSONPath');
  });

  it.each(TASK_NAMES)('%s gets the whole state, returns its slot, and has a timeout', (name) => {
    const [resultPath, timeoutSeconds] = TASKS[name];
    const task = state(name);
    expect(task.Resource).toMatch(
      new RegExp(
        `^${PLACEHOLDER_FUNCTION_ARN_PREFIX}HopperPipeline${name}FunctionCurrentVersion[0-9A-F]{8}[0-9a-f]{32}$`,
      ),
    );
    expect(task.ResultPath).toBe(resultPath);
    expect(task.TimeoutSeconds).toBe(timeoutSeconds);
    for (const field of ['Parameters', 'InputPath', 'OutputPath', 'ResultSelector']) {
      expect(task).not.toHaveProperty(field);
    }
  });

  it.each(TASK_NAMES)(
    '%s retries transient errors with backoff and full jitter, and a timeout or a dead Lambda once',
    (name) => {
      expect(state(name).Retry).toEqual([
        {
          ErrorEquals: [
            'Hopper.Retryable',
            'Lambda.ClientExecutionTimeoutException',
            'Lambda.ServiceException',
            'Lambda.AWSLambdaException',
            'Lambda.SdkClientException',
            'Lambda.TooManyRequestsException',
          ],
          IntervalSeconds: 5,
          BackoffRate: 2,
          MaxAttempts: 3,
          MaxDelaySeconds: 30,
          JitterStrategy: 'FULL',
        },
        {
          ErrorEquals: ['States.Timeout', 'Sandbox.Timedout', 'Runtime.ExitError', 'Lambda.Unknown'],
          IntervalSeconds: 2,
          BackoffRate: 2,
          MaxAttempts: 1,
          JitterStrategy: 'FULL',
        },
      ]);
    },
  );

  it.each(TASK_NAMES)(
    "%s's Retry is infra/tasks.ts's table, AWS's best-practice Lambda retrier in it",
    (name) => {
      const retry = (state(name).Retry ?? []) as { ErrorEquals: string[] }[];
      expect(retry.map((retrier) => retrier.ErrorEquals)).toEqual(
        TASK_RETRIERS.map((retrier) => retrier.errors),
      );
      // https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html
      const bestPractice = [
        'Lambda.ClientExecutionTimeoutException',
        'Lambda.ServiceException',
        'Lambda.AWSLambdaException',
        'Lambda.SdkClientException',
      ];
      const transient = retry.find((retrier) => retrier.ErrorEquals.includes('Lambda.ServiceException'));
      expect(transient?.ErrorEquals).toEqual(expect.arrayContaining(bestPractice));
    },
  );

  it.each(TASK_NAMES.filter((name) => name !== 'Report'))('%s catches everything into Report', (name) => {
    expect(state(name).Catch).toEqual([
      { ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'Report' },
    ]);
  });

  it('ends a run whose report fails in a Fail state that keeps the error', () => {
    expect(state('Report').Catch).toEqual([{ ErrorEquals: ['States.ALL'], Next: 'ReportFailed' }]);
    expect(state('ReportFailed')).toMatchObject({ Type: 'Fail', ErrorPath: '$.Error', CausePath: '$.Cause' });
    expect(state('RunFailed')).toMatchObject({
      ErrorPath: '$.report.error.code',
      CausePath: '$.report.error.message',
    });
  });

  it('waits as long as the poll handlers say', () => {
    expect(state('WaitForDataset')).toMatchObject({
      SecondsPath: '$.dataset.waitSeconds',
      Next: 'PollDataset',
    });
    expect(state('WaitForModel')).toMatchObject({ SecondsPath: '$.model.waitSeconds', Next: 'PollModel' });
  });

  it.each(Object.entries(STOPS))('%s records the stop code %s and reports', (name, code) => {
    expect(state(name)).toMatchObject({ Result: { code }, ResultPath: '$.stop', Next: 'Report' });
  });

  it('names the handler bundle of every Task, and each is built', () => {
    expect(Object.keys(handlers).sort()).toEqual([...TASK_NAMES].sort());
    expect(handlers.UploadFiles).toBe('upload-files');
    for (const name of Object.values(handlers)) expect(existsSync(handlerBundle(name)), name).toBe(true);
  });

  it('is the definition local mode reads from the build (dist/definition.json)', () => {
    expect(loadLocalDefinition()).toEqual({ definition, handlers });
  });

  it('is accepted by aws-local-stepfunctions, ARN and path checks included', () => {
    expect(() => new StateMachine(definition as unknown as StateMachineDefinition)).not.toThrow();
  });
});

// ---- Routing: the definition run locally with scripted Tasks ----

/** `nextAction` may be a value the types exclude: the definition must route it too. */
function dataset(nextAction: string): DatasetSlot {
  return datasetSlotOf({
    id: 'ds_1',
    status: 'read',
    nextAction: nextAction as NextAction,
    waitSeconds: nextAction === 'wait' ? 30 : 0,
  });
}

function model(nextAction: string, attempts = 1): ModelSlot {
  return modelSlotOf({
    id: 'm_1',
    status: 'training',
    nextAction: nextAction as NextAction,
    version: attempts,
    attempts,
    retryLeft: attemptsLeft(attempts, SCRIPTED_CONFIG.maxAttempts),
    waitSeconds: nextAction === 'wait' ? 30 : 0,
  });
}

/** What each Task returns (or throws), call by call; Report decides from the state it is given. */
type Script = Partial<Record<Exclude<TaskName, 'Report'>, (object | Error)[]>> & { Report?: Error[] };

interface RunRecord {
  readonly path: string[];
  readonly calls: Record<string, number>;
  readonly reportInput: Record<string, unknown> | undefined;
  readonly output: unknown;
  readonly error: LocalExecution['error'];
}

async function runScript(script: Script): Promise<RunRecord> {
  const calls: Record<string, number> = {};
  let reportInput: Record<string, unknown> | undefined;
  const next = (name: TaskName): object => {
    const call = (calls[name] = (calls[name] ?? 0) + 1);
    const result = (script as Record<string, (object | Error)[] | undefined>)[name]?.[call - 1];
    if (result instanceof Error) throw result;
    if (result === undefined) throw new Error(`unscripted call ${call} of ${name}`);
    return result;
  };
  const localHandlers: Record<string, (input: unknown) => object> = {};
  for (const name of TASK_NAMES) localHandlers[name] = () => next(name);
  localHandlers.Report = (input) => {
    calls.Report = (calls.Report ?? 0) + 1;
    const failure = script.Report?.[calls.Report - 1];
    if (failure !== undefined) throw failure;
    reportInput = input as Record<string, unknown>;
    const stop = reportInput.stop as { code: string } | undefined;
    const caught = reportInput.failure as { Error: string; Cause: string } | undefined;
    if (caught !== undefined) return { outcome: 'failed', error: { code: 'caught', message: caught.Error } };
    if (stop !== undefined)
      return { outcome: 'failed', error: { code: stop.code, message: `stopped: ${stop.code}` } };
    if (reportInput.copy !== undefined) return { outcome: 'succeeded', error: null };
    return { outcome: 'failed', error: { code: 'internal_error', message: 'nothing to report' } };
  };

  const { output, error, events } = await executeLocally(
    definition,
    { run: { ...SCRIPTED_RUN } },
    localHandlers,
  );
  const path = events.flatMap((event) => (event.type === 'StateEntered' ? [event.state.name] : []));
  return { path, calls, reportInput, output, error };
}

/** The code a failed run ends with (RunFailed's ErrorPath, or the caught error's name). */
function failureCode(record: RunRecord): string | undefined {
  return record.error?.name;
}

const START = ['ValidateDrop', 'CreateDataset', 'RouteDataset'];
const FAILED_END = ['Report', 'RunSucceeded', 'RunFailed'];

describe('routing on next_action', () => {
  it('follows every dataset action to a trained, copied model and succeeds', async () => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [dataset('upload_files')],
      UploadFiles: [dataset('upload_files'), dataset('wait')],
      PollDataset: [dataset('structure'), dataset('pick_decisions'), dataset('label_examples')],
      Structure: [dataset('wait')],
      PickDecisions: [dataset('wait')],
      LabelExamples: [dataset('label_examples'), dataset('start_training')],
      StartTraining: [model('wait')],
      PollModel: [model('download')],
      CopyModel: [
        // A copy put off (the service unreachable): WaitToCopy, then CopyModel again.
        {
          waitSeconds: 2,
          polls: 0,
          waitedSeconds: 0,
          totalPolls: 2,
          totalWaitSeconds: 4,
          failingSince: '2026-01-01T00:00:00.000Z',
          filesDeadline: '2026-01-02T00:00:00.000Z',
          reason: 'unavailable',
        },
        { modelKey: 'models/drop/m_1/model.onnx', recordKey: 'models/drop/m_1/model.json', bytes: 5 },
      ],
    });
    expect(record.error).toBeUndefined();
    // prettier-ignore
    expect(record.path).toEqual([
      ...START,
      'UploadFiles', 'RouteDataset', 'UploadFiles', 'RouteDataset',
      'WaitForDataset', 'PollDataset', 'RouteDataset', 'Structure', 'RouteDataset',
      'WaitForDataset', 'PollDataset', 'RouteDataset', 'PickDecisions', 'RouteDataset',
      'WaitForDataset', 'PollDataset', 'RouteDataset', 'LabelExamples', 'RouteDataset', 'LabelExamples', 'RouteDataset',
      'StartTraining', 'RouteModel', 'WaitForModel', 'PollModel', 'RouteModel',
      'CopyModel', 'ModelCopied', 'WaitToCopy', 'CopyModel', 'ModelCopied',
      'Report', 'RunSucceeded', 'Succeeded',
    ]);
    expect(record.output).toMatchObject({
      run: SCRIPTED_RUN,
      config: SCRIPTED_CONFIG,
      dataset: { nextAction: 'start_training' },
      model: { nextAction: 'download' },
      copy: { bytes: 5 },
      report: { outcome: 'succeeded' },
    });
  });

  it.each([
    ['start_over', 'DatasetUnreadable', 'dataset_unreadable'],
    ['expired', 'DatasetExpired', 'dataset_expired'],
    ['teleport', 'UnexpectedNextAction', 'unsupported_next_action'],
  ])('dataset %s ends failed via %s with $.stop.code %s', async (nextAction, stop, code) => {
    const record = await runScript({ ValidateDrop: [SCRIPTED_CONFIG], CreateDataset: [dataset(nextAction)] });
    expect(record.path).toEqual([...START, stop, ...FAILED_END]);
    expect(record.reportInput?.stop).toEqual({ code });
    expect(failureCode(record)).toBe(code);
    expect(record.error?.message).toBe(`stopped: ${code}`);
  });

  it('dataset retry starts a training', async () => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [dataset('retry')],
      StartTraining: [model('none')],
    });
    expect(record.path).toEqual([...START, 'StartTraining', 'RouteModel', 'ModelFilesGone', ...FAILED_END]);
  });

  it('model retry with attempts < maxAttempts goes back to StartTraining', async () => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [dataset('start_training')],
      StartTraining: [model('wait', 1), model('download', 2)],
      PollModel: [model('retry', 1)],
      CopyModel: [{ modelKey: 'k', recordKey: 'r', bytes: 1 }],
    });
    // prettier-ignore
    expect(record.path).toEqual([
      ...START,
      'StartTraining', 'RouteModel', 'WaitForModel', 'PollModel', 'RouteModel', 'AttemptsLeft',
      'StartTraining', 'RouteModel', 'CopyModel', 'ModelCopied', 'Report', 'RunSucceeded', 'Succeeded',
    ]);
    expect(record.calls.StartTraining).toBe(2);
  });

  it('model retry with attempts = maxAttempts ends failed via AttemptsExhausted', async () => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [dataset('start_training')],
      StartTraining: [model('retry', 2)],
    });
    // prettier-ignore
    expect(record.path).toEqual([
      ...START, 'StartTraining', 'RouteModel', 'AttemptsLeft', 'AttemptsExhausted', ...FAILED_END,
    ]);
    expect(failureCode(record)).toBe('training_failed');
  });

  it.each([
    ['none', 'ModelFilesGone', 'model_files_gone'],
    ['teleport', 'UnexpectedNextAction', 'unsupported_next_action'],
  ])('model %s ends failed via %s', async (nextAction, stop, code) => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [dataset('start_training')],
      StartTraining: [model(nextAction)],
    });
    expect(record.path).toEqual([...START, 'StartTraining', 'RouteModel', stop, ...FAILED_END]);
    expect(failureCode(record)).toBe(code);
  });
});

describe('errors', () => {
  it('a final step error is not retried: it is caught into $.failure and reported', async () => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [new RunError('no_credits', 'the account has no credits left')],
    });
    expect(record.calls.CreateDataset).toBe(1);
    expect(record.path).toEqual(['ValidateDrop', 'CreateDataset', ...FAILED_END]);
    expect(record.reportInput?.failure).toMatchObject({
      Error: 'Hopper.Failed',
      Cause: expect.stringContaining('no_credits: the account has no credits left') as unknown,
    });
    expect(failureCode(record)).toBe('caught');
  });

  it('a transient error is retried and the run goes on', async () => {
    const lambdaError = Object.assign(new Error('throttled'), { name: 'Lambda.TooManyRequestsException' });
    const record = await runScript({
      ValidateDrop: [retryable('storage_error', 'S3 hiccup'), lambdaError, SCRIPTED_CONFIG],
      CreateDataset: [dataset('start_over')],
    });
    expect(record.calls.ValidateDrop).toBe(3);
    expect(record.path).toEqual([...START, 'DatasetUnreadable', ...FAILED_END]);
  });

  it("retries Lambda's client-side invocation timeout (ClientExecutionTimeoutException) as transient", async () => {
    const lambdaError = Object.assign(new Error('the Invoke call timed out'), {
      name: 'Lambda.ClientExecutionTimeoutException',
    });
    const record = await runScript({
      ValidateDrop: [lambdaError, SCRIPTED_CONFIG],
      CreateDataset: [dataset('start_over')],
    });
    expect(record.calls.ValidateDrop).toBe(2);
    expect(record.path).toEqual([...START, 'DatasetUnreadable', ...FAILED_END]);
  });

  it('gives up on a transient error after three retries', async () => {
    const record = await runScript({
      ValidateDrop: Array.from({ length: 5 }, () => retryable('service_unavailable', 'down')),
    });
    expect(record.calls.ValidateDrop).toBe(4);
    expect(record.reportInput?.failure).toMatchObject({ Error: 'Hopper.Retryable' });
  });

  it('retries a timed-out step once, then reports it', async () => {
    const timeout = () => Object.assign(new Error('Task timed out'), { name: 'Sandbox.Timedout' });
    const record = await runScript({ ValidateDrop: [timeout(), timeout()] });
    expect(record.calls.ValidateDrop).toBe(2);
    expect(record.reportInput?.failure).toMatchObject({ Error: 'Sandbox.Timedout' });
  });

  it('a report that fails ends the run in ReportFailed with its error', async () => {
    const record = await runScript({
      ValidateDrop: [SCRIPTED_CONFIG],
      CreateDataset: [dataset('expired')],
      Report: [new RunError('storage_error', 'status could not be written')],
    });
    expect(record.path).toEqual([...START, 'DatasetExpired', 'Report', 'ReportFailed']);
    expect(failureCode(record)).toBe('Hopper.Failed');
  });
});

describe('the step a stopped run was in follows the routes (stepUnderWay)', () => {
  type Rule = { readonly StringEquals?: string; readonly Or?: readonly Rule[]; readonly Next?: string };
  /** The Task `choice` sends `action` to, through a Wait or a Choice's first rule (bounded). */
  const routed = (choice: string, action: NextAction): string | undefined => {
    const rules = (states[choice]?.Choices ?? []) as readonly Rule[];
    let next = rules.find((rule) =>
      [rule, ...(rule.Or ?? [])].some((one) => one.StringEquals === action),
    )?.Next;
    for (let hop = 0; hop < 3 && next !== undefined && states[next]?.Type !== 'Task'; hop++) {
      const state = states[next];
      next = state?.Type === 'Choice' ? (state.Choices as readonly Rule[])[0]?.Next : (state?.Next as string);
    }
    return next;
  };

  it('names the Task RouteDataset and RouteModel send each next_action to', () => {
    const cases: [string, NextAction[], string | null][] = [
      [
        'RouteDataset',
        ['upload_files', 'wait', 'structure', 'pick_decisions', 'label_examples', 'start_training', 'retry'],
        null,
      ],
      ['RouteModel', ['wait', 'retry', 'download'], 'm-1'],
    ];
    for (const [choice, actions, model_id] of cases) {
      for (const action of actions) {
        const step = stepUnderWay({
          hopper_step: 'create_dataset',
          next_action: action,
          model_id,
          model: null,
          config_fingerprint: 'f',
        });
        expect([choice, action, STEPS[step].task]).toEqual([choice, action, routed(choice, action)]);
      }
    }
  });
});
