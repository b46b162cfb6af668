/**
 * The drop's current model, lineage and sweeps, end to end through local mode (the real s3rver,
 * the synthesized state machine with the real handlers, the simulated service over HTTP):
 * - promotion both ways: train.json `promote` moves models/<drop>/current.json to a new model only
 *   when it beats the current one by min_delta; a model that does not is still copied and kept,
 *   and the status, the event and model.json say why; without `promote` every new model is current;
 * - model.json and the Succeeded event carry the previous model and the metric differences, and
 *   `hopper models --drop` lists the drop's models oldest to newest;
 * - two runs of one drop racing to promote: both copy, current.json names the newer run's model;
 * - a three-encoder sweep with one encoder failing: the others' models are copied and the best
 *   promoted, the run fails training_failed naming the encoder, and `hopper retry` trains that
 *   encoder again and adopts the others without a credit.
 * The simulated service's trainingMetrics knob decides the metrics, so each comparison is known.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { RunEventDetail } from '../../lambdas/records/events/index.js';
import { readStatus } from '../../lambdas/records/status/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import type { ModelDocument } from '../../lambdas/steps/copy-model.js';
import type { CurrentModel } from '../../lambdas/steps/lineage.js';
import { currentModelKey, inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { runModelsCommand, type DropModel } from '../../local/cli/models.js';
import { runRetryCommand } from '../../local/cli/retry.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { putDrop } from '../helpers/pipeline.js';
import {
  dropAndRun,
  finished,
  type FinishedRun,
  modelObjects,
  nextExecution,
  RUN_TIMEOUT_MS,
  statesEntered,
  useLocalMode,
  wrapOnly,
  nextSecond,
} from '../helpers/local-mode.js';
import { expectSucceeded } from '../helpers/local-runs.js';
import { gate, withTimeout } from '../../testkit/timeout.js';
import { REVIEWS_FILES as DATA } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const metrics = (f1: number) => ({ accuracy: f1 + 0.05, f1 });

async function readJson<T>(local: LocalMode, key: string): Promise<T> {
  const answer = await local.s3.client.send(new GetObjectCommand({ Bucket: local.bucket, Key: key }));
  return JSON.parse((await answer.Body?.transformToString()) ?? 'null') as T;
}

const current = (local: LocalMode, drop: string) => readJson<CurrentModel>(local, currentModelKey(drop));
const record = (local: LocalMode, drop: string, id: string) =>
  readJson<ModelDocument>(local, `models/${drop}/${id}/model.json`);

function endEvent(local: LocalMode, run: FinishedRun): RunEventDetail | undefined {
  return local.events
    .events()
    .find((event) => event.detail.run_id === run.execution.name && event.detail.state !== 'running')?.detail;
}

async function modelsListed(local: LocalMode, drop: string): Promise<DropModel[]> {
  const listed = await runCommandCaptured(runModelsCommand, ['--drop', drop, '--json'], settingsOf(local));
  expect(listed).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(listed.stdout) as DropModel[];
}

describe('promotion: current.json moves only to a model that beats it', () => {
  it('better and not better, with promote; every new model without it; lineage everywhere', async () => {
    const local = await fixture.start({
      simulated: { trainingMetrics: [metrics(0.8), metrics(0.81), metrics(0.85), metrics(0.7)] },
    });
    const drop = 'promote';
    const promote = JSON.stringify({ promote: { metric: 'f1', min_delta: 0.02 } });

    // The drop's first model: nothing to beat.
    const first = await dropAndRun(local, drop, { ...DATA, [TRAIN_JSON]: promote });
    const m1 = expectSucceeded(first.status, first.execution.name);
    expect(first.status?.promotion).toMatchObject({ model_id: m1, promoted: true, previous_model_id: null });
    expect(await current(local, drop)).toMatchObject({ model_id: m1, metrics: metrics(0.8), previous: null });
    expect(await record(local, drop, m1)).toMatchObject({ previous: null, promotion: { promoted: true } });

    // Not better by min_delta (f1 +0.01 < 0.02): copied and kept, not current, and everyone says why.
    await nextSecond();
    const second = await dropAndRun(local, drop, { [TRAIN_JSON]: promote });
    const m2 = expectSucceeded(second.status, second.execution.name);
    const why = `f1 0.81 does not beat 0.8 of model ${m1} by at least 0.02 (promote.min_delta; the difference is 0.01), so model ${m1} stays current`;
    expect(second.status?.promotion).toEqual({
      model_id: m2,
      promoted: false,
      reason: why,
      previous_model_id: m1,
      differences: { accuracy: 0.01, f1: 0.01 },
    });
    expect(endEvent(local, second)).toMatchObject({
      state: 'succeeded',
      promotion: second.status?.promotion,
    });
    expect(endEvent(local, second)?.summary).toContain(`not promoted to the drop's current model: ${why};`);
    expect(await record(local, drop, m2)).toMatchObject({
      previous: { model_id: m1, encoder: 'enc-small', metrics: metrics(0.8), differences: { f1: 0.01 } },
      promotion: { promoted: false, reason: why },
    });
    expect((await current(local, drop)).model_id).toBe(m1);
    expect([...(await modelObjects(local, drop)).keys()]).toContain(`${m2}/model.onnx`);

    // Better by min_delta: current.json moves, naming the model it replaced.
    await nextSecond();
    const third = await dropAndRun(local, drop, { [TRAIN_JSON]: promote });
    const m3 = expectSucceeded(third.status, third.execution.name);
    expect(third.status?.promotion).toMatchObject({ promoted: true, previous_model_id: m1 });
    expect(third.status?.promotion?.differences).toEqual({ accuracy: 0.05, f1: 0.05 });
    expect(endEvent(local, third)?.promotion).toEqual(third.status?.promotion);
    expect(await current(local, drop)).toMatchObject({
      model_id: m3,
      run_id: third.execution.name,
      record: `s3://${local.bucket}/models/${drop}/${m3}/model.json`,
      previous: { model_id: m1 },
    });

    // Without promote: a worse model becomes current all the same.
    await nextSecond();
    const fourth = await dropAndRun(local, drop, { [TRAIN_JSON]: '{}' });
    const m4 = expectSucceeded(fourth.status, fourth.execution.name);
    expect(fourth.status?.promotion).toMatchObject({
      promoted: true,
      reason: 'train.json has no "promote": every new model becomes current',
      differences: { f1: -0.15 },
    });
    expect((await current(local, drop)).model_id).toBe(m4);

    // hopper models --drop: every model, oldest to newest, with metrics and the current one.
    const listed = await modelsListed(local, drop);
    expect(
      listed.map((model) => [model.model_id, model.metrics.f1, model.current, model.previous_model_id]),
    ).toEqual([
      [m1, 0.8, false, null],
      [m2, 0.81, false, m1],
      [m3, 0.85, false, m1],
      [m4, 0.7, true, m3],
    ]);
    const table = await runCommandCaptured(runModelsCommand, ['--drop', drop], settingsOf(local));
    expect(table.stdout.split('\n')[0]).toMatch(/^MODEL +ENCODER +CREATED +METRICS +CHANGE +VS +CURRENT$/);
    expect(table.stdout).toContain('f1 +0.01');
    expect(local.simulated?.credits()).toBe(6);
  });
});

describe('two runs of one drop racing to promote', () => {
  it("both copy; current.json names the newer run's model, although worse, whichever report writes first", async () => {
    // Each Report waits until both runs have reached theirs, then both go at once.
    let arrived = 0;
    const together = gate();
    const wrapTask = wrapOnly('Report', (lambda) => async (input) => {
      if ((input as RunState).copy !== undefined && ++arrived === 2) together.open();
      await withTimeout(together.opened, 'the other run did not reach its report', RUN_TIMEOUT_MS);
      return lambda(input);
    });
    // The first (older) run's model is the better one, but the newer train.json is what counts.
    const local = await fixture.start({
      wrapTask,
      simulated: { queuedMs: 20, trainingMs: 1500, trainingMetrics: [metrics(0.9), metrics(0.7)] },
    });
    const drop = 'race';
    const train = JSON.stringify({ promote: { metric: 'f1', min_delta: 0 } });
    const key = inboxKey(drop, TRAIN_JSON);
    const firstStarted = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, drop, { ...DATA, [TRAIN_JSON]: train });
    const firstExecution = await firstStarted.execution;
    // Uploaded again, changed, while the first run trains: the first finishes its paid training.
    for (let tries = 0; ; tries++) {
      const status = await readStatus(local.s3.client, local.bucket, drop);
      if (status?.next_action === 'wait' && status.model_id !== null) break;
      if (tries > 1000) throw new Error('the first run never trained');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Changed settings, so the second run trains its own model (the same train.json would adopt
    // the first run's: redrop.test.ts).
    const changed = JSON.stringify({ promote: { metric: 'f1', min_delta: 0 }, maxAttempts: 2 });
    const secondStarted = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: changed });
    const secondExecution = await secondStarted.execution;
    const [first, second] = await Promise.all([
      finished(local, firstExecution, firstStarted.events),
      finished(local, secondExecution, secondStarted.events),
    ]);

    const firstModel =
      (first.outcome.status === 'SUCCEEDED' && (first.outcome.output as RunState).model?.id) || '';
    const secondModel = expectSucceeded(second.status, second.execution.name);
    expect(statesEntered(first.events)).toContain('CopyModel');
    const kept = [...(await modelObjects(local, drop)).keys()].sort();
    expect(kept).toEqual(
      [
        `${firstModel}/model.json`,
        `${firstModel}/model.onnx`,
        `${secondModel}/model.json`,
        `${secondModel}/model.onnx`,
      ].sort(),
    );
    expect(await current(local, drop)).toMatchObject({ model_id: secondModel, metrics: metrics(0.7) });
    // The older run, superseded, recorded its model without promoting it.
    const better = await record(local, drop, firstModel);
    const worse = await record(local, drop, secondModel);
    expect(better.promotion).toMatchObject({ promoted: false });
    expect(better.promotion?.reason).toContain(
      `a newer train.json of the drop (run ${secondExecution.name}) took over`,
    );
    expect(worse.promotion).toMatchObject({ promoted: true });
    expect(local.simulated?.credits()).toBe(8);
  });
});

describe('a sweep: three encoders from one upload', () => {
  it('one encoder failing: the others are copied and the best promoted; hopper retry trains it, adopting the others', async () => {
    let failNext = true;
    const wrapTask = wrapOnly('StartTraining', (lambda) => (input) => {
      // On to enc-b: its one attempt fails (the service gives its credit back).
      if (failNext && (input as RunState).model?.nextEncoder === 'enc-b') {
        failNext = false;
        local.simulated?.configure({ failTrainings: 1 });
      }
      return lambda(input);
    });
    const local = await fixture.start({
      wrapTask,
      simulated: {
        encoders: [
          { id: 'enc-a', name: 'A', default: true },
          { id: 'enc-b', name: 'B', default: false },
          { id: 'enc-c', name: 'C', default: false },
        ],
        trainingMetrics: [metrics(0.8), metrics(0.99), metrics(0.9), metrics(0.95)],
      },
    });
    const drop = 'sweep';
    const train = {
      encoders: ['enc-a', 'enc-b', 'enc-c'],
      maxAttempts: 1,
      promote: { metric: 'f1', min_delta: 0 },
    };
    const run = await dropAndRun(local, drop, { ...DATA, [TRAIN_JSON]: JSON.stringify(train) });

    // enc-b failed on its one attempt; enc-a and enc-c trained, were copied, and the best is current.
    const status = run.status;
    expect(status).toMatchObject({ state: 'failed', error: { code: 'training_failed' } });
    expect(status?.error?.message).toContain('for encoder "enc-b" (the last failed with: training failed');
    expect(status?.error?.message).toContain('the models of "enc-a", "enc-c" were copied and kept');
    expect(status?.error?.message).toContain(`hopper retry ${drop} --max-attempts N (above 1)`);
    const outcomes = status?.encoders ?? [];
    expect(outcomes.map((one) => [one.encoder, one.outcome, one.attempts])).toEqual([
      ['enc-a', 'copied', 1],
      ['enc-b', 'failed', 1],
      ['enc-c', 'copied', 1],
    ]);
    const [a, b, c] = outcomes.map((one) => one.model_id ?? '');
    expect(outcomes[1]?.error).toContain('training failed');
    expect([...(await modelObjects(local, drop)).keys()].sort()).toEqual(
      [`${a}/model.json`, `${a}/model.onnx`, `${c}/model.json`, `${c}/model.onnx`].sort(),
    );
    expect((await current(local, drop)).model_id).toBe(c);
    expect(status?.promotion).toMatchObject({ model_id: c, promoted: true, previous_model_id: null });
    for (const id of [a, c]) expect((await record(local, drop, id ?? '')).encoders).toEqual(outcomes);
    expect((await record(local, drop, a ?? '')).promotion?.reason).toBe(
      `model ${c} of the sweep scored higher on f1`,
    );
    expect(endEvent(local, run)).toMatchObject({ state: 'failed', promotion: status?.promotion });
    expect(local.simulated?.credits()).toBe(8);

    // hopper retry: enc-b trains again; enc-a's and enc-c's models are adopted, no credit, no upload.
    const resumed = nextExecution(local, inboxKey(drop, TRAIN_JSON));
    const retried = await runCommandCaptured(
      runRetryCommand,
      [drop, '--max-attempts', '2'],
      settingsOf(local),
    );
    expect(retried).toMatchObject({ code: 0, stderr: '' });
    const second = await finished(local, await resumed.execution, resumed.events);
    expect(second.status).toMatchObject({ state: 'succeeded', error: null });
    const after = second.status?.encoders ?? [];
    expect(after.map((one) => [one.encoder, one.outcome, one.attempts])).toEqual([
      ['enc-a', 'copied', 1],
      ['enc-b', 'copied', 2],
      ['enc-c', 'copied', 1],
    ]);
    expect([after[0]?.model_id, after[2]?.model_id]).toEqual([a, c]);
    expect(after[1]?.model_id).not.toBe(b);
    expect((await current(local, drop)).model_id).toBe(after[1]?.model_id);
    expect(second.status?.promotion).toMatchObject({ promoted: true, previous_model_id: c });
    expect(local.simulated?.credits()).toBe(7);
    expect(local.simulated?.requestCount('createDataset')).toBe(1);
    expect(local.simulated?.requestCount('startTraining')).toBe(4);
  });
});
