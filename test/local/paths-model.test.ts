/**
 * Every path of a model through local mode, end to end, and the trigger's: files put into the
 * local S3 bucket under inbox/<drop>/ (train.json last), the S3 event starting the run through
 * the trigger, the synthesized state machine with the real handlers, the simulated service over
 * HTTP. No mocks: each test looks at what a user sees (the outcome, status/<drop>.json,
 * models/<drop>/) and at what the service saw (requests, credits), and at the route taken.
 * The dataset's paths (decisions, labels, unreadable, expired, bad drops) are in paths-dataset.test.ts.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { executionName } from '../../lambdas/core/state/index.js';
import { runInputFromEvent } from '../../lambdas/trigger/start-execution.js';
import { s3ObjectCreatedEvent } from '../../local/emulator/s3-events.js';
import { putDrop } from '../helpers/pipeline.js';
import {
  dropAndRun,
  finished,
  modelObjects,
  nextExecution,
  statesEntered,
  useLocalMode,
  nextSecond,
} from '../helpers/local-mode.js';
import { expectCopied, expectFailed, expectSaved, expectSucceeded } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** The model id in a state's input ($.model.id). */
function modelIdIn(input: unknown): string {
  const model = (input as { model?: { id?: unknown } } | null)?.model;
  if (typeof model?.id !== 'string') throw new Error('the state input has no $.model.id');
  return model.id;
}

describe('training', () => {
  it('a failed training is retried: attempts 2, the model copied, one credit spent in the end', async () => {
    const local = await fixture.start({ simulated: { failTrainings: 1 } });
    const run = await dropAndRun(local, 'retried', reviewsDrop());

    expect(run.outcome.status).toBe('SUCCEEDED');
    const modelId = expectSucceeded(run.status, run.execution.name);
    expect(run.status?.attempts).toBe(2);
    const objects = await modelObjects(local, 'retried');
    // Only the model that trained: the failed attempt left nothing behind.
    expect([...objects.keys()].sort()).toEqual([`${modelId}/model.json`, `${modelId}/model.onnx`]);
    const record = expectCopied(objects, modelId, run.execution.name);
    expect(record.run.attempts).toBe(2);
    const route = statesEntered(run.events);
    expect(route.filter((state) => state === 'StartTraining')).toHaveLength(2);
    expect(route).toContain('AttemptsLeft');
    expect(local.simulated?.requestCount('startTraining')).toBe(2);
    // The failed attempt's credit came back.
    expect(local.simulated?.credits()).toBe(9);
  });

  it('every attempt failing (maxAttempts 2) fails with training_failed, credits back, no model objects', async () => {
    const local = await fixture.start({ simulated: { failTrainings: 2 } });
    const run = await dropAndRun(local, 'exhausted', reviewsDrop('{"maxAttempts": 2}'));

    const status = await expectFailed(local, run, 'training_failed');
    expect(status).toMatchObject({ attempts: 2, max_attempts: 2, step: 4, next_action: 'retry' });
    expect(status.error?.message).toContain('training failed on 2 of 2 attempts (maxAttempts)');
    expect(statesEntered(run.events)).toContain('AttemptsExhausted');
    expect(statesEntered(run.events)).not.toContain('CopyModel');
    expect(local.simulated?.requestCount('startTraining')).toBe(2);
    expect(local.simulated?.credits()).toBe(10);
  });

  it('no credits fails with no_credits and says to add credits; nothing is trained', async () => {
    const local = await fixture.start({ simulated: { credits: 0 } });
    const run = await dropAndRun(local, 'broke', reviewsDrop());

    const status = await expectFailed(local, run, 'no_credits');
    expect(status).toMatchObject({ step: 3, next_action: 'start_training', model_id: null, attempts: 0 });
    expect(status.error?.message).toContain('no credits left');
    expect(status.error?.message).toContain(
      'add credits at the service, then resume the run without uploading again',
    );
    // Asked once and refused: no model exists at the service.
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.requestCount('getModel')).toBe(0);
    expect(local.simulated?.credits()).toBe(0);
  });

  it('a next_action Hopper does not know on the model fails with unsupported_next_action naming it; nothing copied', async () => {
    const local = await fixture.start({ simulated: { renameNextActions: { download: 'fetch' } } });
    const run = await dropAndRun(local, 'fetch', reviewsDrop());

    const status = await expectFailed(local, run, 'unsupported_next_action');
    expect(status.error?.message).toContain('fetch');
    expect(status.error?.message).toContain('upgrade Hopper');
    expect(statesEntered(run.events)).not.toContain('CopyModel');
    expect(local.simulated?.requestCount('getDownloadLink')).toBe(0);
    // The training itself succeeded at the service, so its credit is spent.
    expect(local.simulated?.credits()).toBe(9);
  });
});

describe('model files gone before the copy (next_action none)', () => {
  it('files expiring as training ends fail the run with model_files_gone; nothing downloaded or written', async () => {
    // With no lifetime the files are gone the moment the training is done: the run never sees download.
    const local = await fixture.start({ simulated: { modelFilesTtlMs: 0 } });
    const run = await dropAndRun(local, 'expired-files', reviewsDrop());

    const status = await expectFailed(local, run, 'model_files_gone');
    expect(status).toMatchObject({ step: 5, next_action: 'none', attempts: 1 });
    expect(status.error?.message).toContain(
      `the files of model ${status.model_id ?? ''} went at the service`,
    );
    expect(status.error?.message).toContain('trains the same dataset again without uploading');
    const route = statesEntered(run.events);
    expect(route).toContain('ModelFilesGone');
    expect(route).not.toContain('CopyModel');
    expect(local.simulated?.requestCount('getDownloadLink')).toBe(0);
    expect(local.simulated?.credits()).toBe(9);
  });

  it('files removed (refunded) as the copy starts fail with model_files_gone; no half-written model, credit back', async () => {
    // The download link's answer is held back, so the removal lands before any byte is copied
    // even if the event that triggers it arrived late.
    const local = await fixture.start({
      simulated: { faults: [{ endpoint: 'getDownloadLink', kind: 'stall', count: 1, stallMs: 200 }] },
    });
    let removal: unknown = 'not removed';
    local.stateMachine.on('event', (_execution, event) => {
      if (event.type !== 'StateEntered' || event.state.name !== 'CopyModel') return;
      try {
        local.simulated?.removeModelFiles(modelIdIn(event.state.input), 'refunded');
        removal = undefined;
      } catch (error) {
        removal = error;
      }
    });
    const run = await dropAndRun(local, 'refunded', reviewsDrop());

    expect(removal).toBeUndefined();
    const status = await expectFailed(local, run, 'model_files_gone');
    expect(status.error?.message).toContain(
      `the files of model ${status.model_id ?? ''} went at the service`,
    );
    expect(status.error?.message).toContain('cannot be downloaded any more');
    expect(statesEntered(run.events)).toContain('CopyModel');
    expect(local.simulated?.credits()).toBe(10);
  });
});

describe('trigger events', () => {
  it('the S3 event delivered again starts nothing: one execution, one credit', async () => {
    const local = await fixture.start();
    const key = inboxKey('twice', TRAIN_JSON);
    const started = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, 'twice', reviewsDrop());
    const execution = await started.execution;

    // The event s3rver's notification became: local mode gives the first train.json of its
    // bucket version local-00000001. The trigger took it first. An event for the same object
    // built again later carries another time, so other input: ExecutionAlreadyExists, a
    // "duplicate", while the run is under way or not.
    const head = await local.s3.client.send(new HeadObjectCommand({ Bucket: local.bucket, Key: key }));
    const etag = head.ETag ?? '';
    const versionId = 'local-00000001';
    expect(execution.name).toBe(executionName(local.bucket, key, etag, versionId));
    const event = s3ObjectCreatedEvent({
      bucket: local.bucket,
      key,
      etag,
      size: head.ContentLength ?? 0,
      versionId,
    });
    const second = await local.deliver(event);
    const third = await local.deliver(event);
    expect(second).toEqual({
      started: false,
      reason: expect.stringContaining('duplicate') as string,
      runId: execution.name,
    });
    expect(third).toEqual(second);

    const run = await finished(local, execution, started.events);
    expect(run.outcome.status).toBe('SUCCEEDED');
    // The very event again (EventBridge's redelivery: the same time and sequencer, so the same input) after the
    // run has ended: ExecutionAlreadyExists too. While it was open it would have answered the
    // run itself (test/pipeline/sfn-starter.test.ts).
    const { sequencer } = execution.input.run;
    const object = { ...event.detail.object, sequencer: sequencer ?? '' };
    const again = { ...event, time: execution.input.run.startedAt, detail: { ...event.detail, object } };
    const { executionArn } = execution.input.run;
    expect({ ...runInputFromEvent(again, 0), executionArn }).toEqual(execution.input.run);
    expect(await local.deliver(again)).toEqual(second);
    await expectSaved(local, run);
    expect(local.stateMachine.executions()).toEqual([execution]);
    expect(local.simulated?.requestCount('createDataset')).toBe(1);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.credits()).toBe(9);
  });

  it('train.json uploaded again (a new version) starts a new run, whose status takes over status/<drop>.json', async () => {
    const local = await fixture.start();
    const first = await dropAndRun(local, 'again', reviewsDrop());
    expect(first.outcome.status).toBe('SUCCEEDED');
    expectSucceeded(first.status, first.execution.name);

    // The same bytes again: the same etag, but a new version of train.json.
    await nextSecond();
    const second = await dropAndRun(local, 'again', { 'train.json': '{}' });
    expect(second.execution.name).not.toBe(first.execution.name);
    expect(second.outcome.status).toBe('SUCCEEDED');
    const secondModelId = expectSucceeded(second.status, second.execution.name);

    // Both runs trained and copied their own model; nothing of the first was lost.
    const objects = await modelObjects(local, 'again');
    expect(objects.size).toBe(4);
    expectCopied(objects, first.status?.model_id ?? '', first.execution.name);
    expectCopied(objects, secondModelId, second.execution.name);
    expect(local.stateMachine.executions()).toHaveLength(2);
    expect(local.simulated?.credits()).toBe(8);
  });
  // train.json uploaded again while a run is under way: test/local/redrop.test.ts.
});
