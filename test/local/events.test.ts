/**
 * Run events end to end through local mode: a drop put into the local S3 bucket, the trigger,
 * the synthesized state machine with the real handlers, the simulated service; the events are
 * read from local mode's bus (in place of EventBridge's default bus). Each run has exactly one
 * Started and one Succeeded or Failed event, with what status/<drop>.json and model.json say,
 * also when the report is retried after it has put its event.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { RunEventDetail } from '../../lambdas/records/events/index.js';
import { executionArnOf } from '../../lambdas/core/state/index.js';
import type { DeliveredRunEvent } from '../../local/emulator/event-bus.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { LambdaInvocationError } from '../../local/emulator/lambda-invoke.js';
import { LOCAL_STATE_MACHINE_ARN } from '../../local/emulator/state-machine.js';
import { dropAndRun, type FinishedRun, useLocalMode, wrapOnly } from '../helpers/local-mode.js';
import { expectFailed, expectSucceeded } from '../helpers/local-runs.js';
import { REVIEWS_CSV, reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** The events of one run, by detail type; fails unless each type appears at most once. */
function eventsOf(local: LocalMode, run: FinishedRun): DeliveredRunEvent[] {
  return local.events.events().filter((event) => event.detail.run_id === run.execution.name);
}

function detailTypes(events: readonly DeliveredRunEvent[]): string[] {
  return events.map((event) => event['detail-type']);
}

async function modelJson(local: LocalMode, key: string): Promise<{ model: { metrics: unknown } }> {
  const answer = await local.s3.client.send(new GetObjectCommand({ Bucket: local.bucket, Key: key }));
  return JSON.parse((await answer.Body?.transformToString()) ?? '') as { model: { metrics: unknown } };
}

/** Nothing secret in an event: the API key never leaves the runtime. */
function expectNoApiKey(local: LocalMode, events: readonly DeliveredRunEvent[]): void {
  const apiKey = local.simulated?.apiKey ?? '';
  expect(apiKey).not.toBe('');
  for (const event of events) expect(JSON.stringify(event)).not.toContain(apiKey);
}

describe('run events through local mode', () => {
  it('a succeeded run: one Started, then one Succeeded with the ids, model, metrics, attempts, credits and duration', async () => {
    const local = await fixture.start();
    const run = await dropAndRun(local, 'events-ok', reviewsDrop());
    const modelId = expectSucceeded(run.status, run.execution.name);

    const events = eventsOf(local, run);
    expect(detailTypes(events)).toEqual(['Hopper Run Started', 'Hopper Run Succeeded']);
    const executionArn = executionArnOf(LOCAL_STATE_MACHINE_ARN, run.execution.name);
    for (const event of events) {
      expect(event.source).toBe('hopper');
      expect(event.resources).toEqual([executionArn]);
      expect(event.detail).toMatchObject({
        run_id: run.execution.name,
        drop: 'events-ok',
        execution_arn: executionArn,
      });
    }
    const status = run.status;
    const model = status?.model;
    const succeeded = events[1]?.detail as RunEventDetail;
    expect(succeeded).toMatchObject({
      event_id: `${run.execution.name}/succeeded`,
      state: 'succeeded',
      dataset_id: status?.dataset_id,
      model_id: modelId,
      model: { onnx: model?.onnx, record: model?.record, bytes: model?.bytes },
      attempts: 1,
      credits: 1,
      started_at: status?.started_at,
      finished_at: status?.finished_at,
      error: null,
    });
    const record = await modelJson(local, `models/events-ok/${modelId}/model.json`);
    expect(succeeded.metrics).toEqual(record.model.metrics);
    expect(succeeded.metrics).not.toBeNull();
    expect(succeeded.duration_seconds).toBe(
      Math.round((Date.parse(succeeded.finished_at ?? '') - Date.parse(succeeded.started_at)) / 1000),
    );
    expect(succeeded.summary).toContain(model?.onnx);
    expectNoApiKey(local, events);
  });

  it('a failed run: one Started, then one Failed with the code and message of the status file', async () => {
    const local = await fixture.start({ simulated: { credits: 0 } });
    const run = await dropAndRun(local, 'events-broke', reviewsDrop());
    const status = await expectFailed(local, run, 'no_credits');

    const events = eventsOf(local, run);
    expect(detailTypes(events)).toEqual(['Hopper Run Started', 'Hopper Run Failed']);
    expect(events[1]?.detail).toMatchObject({
      state: 'failed',
      error: status.error,
      dataset_id: status.dataset_id,
      model_id: null,
      model: null,
      metrics: null,
      credits: 0,
      attempts: 0,
    });
    expect(events[1]?.detail.summary).toContain(
      `with no_credits: ${status.error?.message.replace(/[.\s]+$/, '') ?? ''}`,
    );
    expectNoApiKey(local, events);
  });

  it('a drop refused by validate_drop still has its Started before its Failed', async () => {
    const local = await fixture.start();
    const run = await dropAndRun(local, 'events-bad', {
      'reviews.csv': REVIEWS_CSV,
      'train.json': '{"maxAttempts": "x"}',
    });
    await expectFailed(local, run, 'invalid_train_json');
    expect(detailTypes(eventsOf(local, run))).toEqual(['Hopper Run Started', 'Hopper Run Failed']);
  });

  it('a report retried after it put its event (the invocation’s answer lost) puts it once', async () => {
    let reports = 0;
    const local = await fixture.start({
      wrapTask: wrapOnly('Report', (task) => async (input) => {
        const result = await task(input);
        reports++;
        // Lambda ran the handler to its end, then failed to hand back its answer.
        if (reports === 1) throw new LambdaInvocationError('Lambda.ServiceException', 'the answer was lost');
        return result;
      }),
    });
    const run = await dropAndRun(local, 'events-retried', reviewsDrop());
    expectSucceeded(run.status, run.execution.name);

    expect(reports).toBe(2);
    expect(detailTypes(eventsOf(local, run))).toEqual(['Hopper Run Started', 'Hopper Run Succeeded']);
  });
});
