import { describe, expect, it } from 'vitest';
import { stepHandler } from '../../lambdas/runtime/index.js';
import type {
  CaughtFailure,
  CopySlot,
  DatasetSlot,
  ModelSlot,
  RunState,
  StopCode,
} from '../../lambdas/core/state/index.js';
import { readStatus } from '../../lambdas/records/status/index.js';
import { reportOf, reportStep } from '../../lambdas/steps/report.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import { invocationContext, readText, stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, datasetSlotOf, modelSlotOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();
const BUCKET = 'bucket';

const DATASET: DatasetSlot = datasetSlotOf({ id: 'ds-1', totalPolls: 3 });

const MODEL: ModelSlot = modelSlotOf({
  id: 'model-1',
  status: 'failed',
  nextAction: 'retry',
  version: 3,
  attempts: 3,
  retryLeft: false,
  error: 'training diverged at epoch 2',
  totalPolls: 9,
});

const COPY: CopySlot = {
  modelKey: 'models/d/model-1/model.onnx',
  recordKey: 'models/d/model-1/model.json',
  bytes: 1024,
};

const STACK = 'Error: boom\n    at step (/var/task/index.mjs:10:5)\n    at process (node:internal/x:1:1)';

function state(slots: Omit<RunState, 'run'>): RunState {
  return stateOf(BUCKET, { config: configOf(), ...slots }, { drop: 'drop-1' });
}

function failure(Error: string, Cause?: string): CaughtFailure {
  return Cause === undefined ? { Error } : { Error, Cause };
}

/** Lambda's Cause for an error thrown by a Node.js handler. */
function lambdaCause(errorType: string, errorMessage: string): string {
  return JSON.stringify({
    errorType,
    errorMessage,
    trace: [`${errorType}: ${errorMessage}`, ...STACK.split('\n')],
  });
}

describe('report: a caught failure', () => {
  it("a Hopper error: code and message from Lambda's JSON Cause", () => {
    const report = reportOf(
      state({
        dataset: DATASET,
        failure: failure(
          'Hopper.Failed',
          lambdaCause('Hopper.Failed', 'invalid_decision: there is no question "x"'),
        ),
      }),
    );
    expect(report).toEqual({
      outcome: 'failed',
      error: { code: 'invalid_decision', message: 'there is no question "x"' },
    });
  });

  it('a retryable Hopper error whose retries ran out: code and message from a plain Cause', () => {
    const report = reportOf(
      state({
        failure: failure('Hopper.Retryable', 'service_unavailable: the training service did not answer'),
      }),
    );
    expect(report.error).toEqual({
      code: 'service_unavailable',
      message: 'the training service did not answer',
    });
  });

  it('a message with a colon in its text keeps it', () => {
    const cause = 'label_missing: no row of labels.csv matches example "r1": "Great: really"';
    expect(reportOf(state({ failure: failure('Hopper.Failed', cause) })).error).toEqual({
      code: 'label_missing',
      message: 'no row of labels.csv matches example "r1": "Great: really"',
    });
  });

  it.each(['States.Timeout', 'Sandbox.Timedout'])('%s: step_timeout, saying where the run was', (name) => {
    const report = reportOf(
      state({ dataset: DATASET, failure: failure(name, 'Task timed out after 960 s') }),
    );
    expect(report.error?.code).toBe('step_timeout');
    expect(report.error?.message).toContain(name);
    expect(report.error?.message).toContain('dataset ds-1 was at next_action "upload_files"');
  });

  it('a Hopper error without a Cause, or with an unknown code: internal_error', () => {
    const missing = reportOf(state({ model: MODEL, failure: failure('Hopper.Failed') }));
    expect(missing.error?.code).toBe('internal_error');
    expect(missing.error?.message).toContain('Hopper.Failed');
    expect(missing.error?.message).toContain('model model-1 was at next_action "retry"');

    const unknown = reportOf(state({ failure: failure('Hopper.Failed', 'bogus_code: something') }));
    expect(unknown.error?.code).toBe('internal_error');
    expect(unknown.error?.message).toContain('bogus_code: something');
  });

  it('any other error: internal_error with its message, the run id, and no stack trace', () => {
    const report = reportOf(
      state({
        failure: failure('Runtime.UnhandledPromiseRejection', lambdaCause('TypeError', 'x is undefined')),
      }),
    );
    expect(report.error?.code).toBe('internal_error');
    expect(report.error?.message).toContain('Runtime.UnhandledPromiseRejection: x is undefined');
    expect(report.error?.message).toContain('drop-1-run');
    expect(report.error?.message).not.toContain(' at ');
    expect(report.error?.message).not.toContain('index.mjs');
  });

  it('a Hopper error named by something else than Hopper is not trusted for its code', () => {
    const report = reportOf(state({ failure: failure('States.TaskFailed', 'no_credits: none left') }));
    expect(report.error?.code).toBe('internal_error');
  });

  it('wins over a stop and a copy', () => {
    const report = reportOf(
      state({
        stop: { code: 'model_files_gone' },
        copy: COPY,
        failure: failure('Hopper.Failed', 'model_size_mismatch: 10 bytes, expected 20'),
      }),
    );
    expect(report.error?.code).toBe('model_size_mismatch');
  });
});

describe('report: a failed run whose training holds a credit', () => {
  const PAID: ModelSlot = { ...MODEL, status: 'done', nextAction: 'download', error: null, onnxBytes: 1024 };

  it('says which model was paid for and that resuming adopts it', () => {
    const report = reportOf(
      state({ model: PAID, failure: failure('Hopper.Failed', 'model_size_mismatch: 10 bytes, expected 20') }),
    );
    expect(report).toEqual({
      outcome: 'failed',
      error: {
        code: 'model_size_mismatch',
        message:
          '10 bytes, expected 20. Its model model-1 was paid for (1 credit) and was done at the service: hopper retry drop-1 adopts it and copies it without a second credit',
      },
    });
  });

  it('says nothing of a failed training (its credit came back) or of files already gone', () => {
    const refunded = reportOf(
      state({ model: MODEL, failure: failure('Hopper.Failed', 'unauthorized: key') }),
    );
    expect(refunded.error).toEqual({ code: 'unauthorized', message: 'key' });
    const gone = reportOf(
      state({ model: { ...PAID, nextAction: 'none' }, stop: { code: 'model_files_gone' } }),
    );
    expect(gone.error?.message).not.toContain('paid for');
  });
});

describe('report: a stop on a next_action', () => {
  it("dataset_unreadable: the service's reason and what to do", () => {
    const dataset: DatasetSlot = {
      ...DATASET,
      status: 'unreadable',
      nextAction: 'start_over',
      error: 'reviews.csv: row 3: bad quote',
    };
    const report = reportOf(state({ dataset, stop: { code: 'dataset_unreadable' } }));
    expect(report.outcome).toBe('failed');
    expect(report.error?.code).toBe('dataset_unreadable');
    expect(report.error?.message).toContain('reviews.csv: row 3: bad quote');
    expect(report.error?.message).toMatch(/fix the file and drop the folder again, train\.json last/i);
  });

  it('dataset_expired: when it expired', () => {
    const dataset: DatasetSlot = { ...DATASET, step: 3, status: 'expired', nextAction: 'expired' };
    const report = reportOf(state({ dataset, stop: { code: 'dataset_expired' } }));
    expect(report.error?.code).toBe('dataset_expired');
    expect(report.error?.message).toContain('2026-01-08T00:00:00.000Z');
    expect(report.error?.message).toContain('ds-1');
  });

  it('training_failed: attempts used of maxAttempts and the last error', () => {
    const report = reportOf(state({ dataset: DATASET, model: MODEL, stop: { code: 'training_failed' } }));
    expect(report.error?.code).toBe('training_failed');
    expect(report.error?.message).toContain('3 of 3 attempts');
    expect(report.error?.message).toContain('training diverged at epoch 2');
    expect(report.error?.message).toContain('model-1');
  });

  it('model_files_gone: the model id', () => {
    const model: ModelSlot = { ...MODEL, step: 5, status: 'done', nextAction: 'none', error: null };
    const report = reportOf(state({ dataset: DATASET, model, stop: { code: 'model_files_gone' } }));
    expect(report.error?.code).toBe('model_files_gone');
    expect(report.error?.message).toContain('model-1');
  });

  it('unsupported_next_action: the value, on the model once there is one, else on the dataset', () => {
    const onModel = reportOf(
      state({
        dataset: DATASET,
        model: { ...MODEL, nextAction: 'structure' },
        stop: { code: 'unsupported_next_action' },
      }),
    );
    expect(onModel.error?.code).toBe('unsupported_next_action');
    expect(onModel.error?.message).toContain('"structure" on the model model-1');

    const onDataset = reportOf(
      state({ dataset: { ...DATASET, nextAction: 'download' }, stop: { code: 'unsupported_next_action' } }),
    );
    expect(onDataset.error?.message).toContain('"download" on the dataset ds-1');
  });

  it('an unknown stop code: internal_error naming it', () => {
    // A state written by another version of the definition: the report still ends the run.
    const report = reportOf(state({ stop: { code: 'mystery' as StopCode } }));
    expect(report.error?.code).toBe('internal_error');
    expect(report.error?.message).toContain('"mystery"');
  });
});

describe('report: no failure, no stop', () => {
  it('a copied model: succeeded', () => {
    expect(reportOf(state({ dataset: DATASET, model: MODEL, copy: COPY }))).toEqual({
      outcome: 'succeeded',
      error: null,
    });
  });

  it('nothing to show for the run: internal_error', () => {
    const report = reportOf(state({ dataset: DATASET }));
    expect(report.outcome).toBe('failed');
    expect(report.error?.code).toBe('internal_error');
  });
});

describe('report: the final status', () => {
  const NOW = Date.parse('2026-01-01T02:00:00.000Z');

  async function runtime() {
    const service = await fixtures.service();
    return fixtures.runtime(service, { now: () => NOW });
  }

  it('a failed run: state failed, the error, finished_at; no stack trace', async () => {
    const { client, bucket } = fixtures.s3();
    const run = stateOf(bucket, {
      config: configOf(),
      dataset: DATASET,
      model: MODEL,
      failure: failure('Lambda.Unknown', lambdaCause('Error', `boom\n${STACK}`)),
    });

    const slot = await reportStep.run(run, stepEnv(await runtime()));

    expect(slot.outcome).toBe('failed');
    const text = (await readText(client, bucket, statusKey(run.run.drop))) ?? '';
    expect(text).not.toMatch(/\bat \S+ \(/);
    expect(text).not.toContain('index.mjs');
    expect(JSON.parse(text)).toMatchObject({
      run_id: run.run.runId,
      state: 'failed',
      hopper_step: 'report',
      dataset_id: 'ds-1',
      model_id: 'model-1',
      attempts: 3,
      max_attempts: 3,
      updated_at: '2026-01-01T02:00:00.000Z',
      finished_at: '2026-01-01T02:00:00.000Z',
      error: slot.error,
      model: null,
    });
  });

  it('a succeeded run, through the handler: written once, by the report, with the model', async () => {
    const { client, bucket } = fixtures.s3();
    const run = stateOf(bucket, { config: configOf(), dataset: DATASET, model: MODEL, copy: COPY });

    const slot = await stepHandler(reportStep).withRuntime(await runtime())(run, invocationContext());

    expect(slot).toEqual({ outcome: 'succeeded', error: null });
    expect(await readStatus(client, bucket, run.run.drop)).toMatchObject({
      state: 'succeeded',
      hopper_step: 'report',
      finished_at: '2026-01-01T02:00:00.000Z',
      error: null,
      model: {
        onnx: `s3://${bucket}/${COPY.modelKey}`,
        record: `s3://${bucket}/${COPY.recordKey}`,
        bytes: 1024,
      },
    });
  });
});
