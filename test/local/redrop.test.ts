/**
 * A drop uploaded again while its run is going (train.json re-uploaded), end to end through local
 * mode: the real s3rver, the synthesized state machine with the real handlers, the simulated
 * service over HTTP. The newest train.json wins: an older run that has not started a training
 * stops at its next step (`superseded`) and spends nothing; one whose training holds a credit
 * finishes it and keeps its model under its own id, which a newer run with the same settings
 * adopts (lambdas/ownership/adoption.ts) instead of training again; the drop never has two
 * trainings at once.
 * Each test holds the first run at one stage (before that Task runs) until the second upload's
 * run has taken status/<drop>.json, then lets it go, and checks the outcomes, the credits (net,
 * per drop), the models in the bucket, the status file and `hopper runs`.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { compareSequencers } from '../../lambdas/core/state/run-order.js';
import { readStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { executionName, type ReportSlot, type RunState } from '../../lambdas/core/state/index.js';
import { currentModelKey, inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { readJson } from '../../lambdas/storage/objects.js';
import { runRunsCommand, type RunSummary } from '../../local/cli/runs.js';
import type { LocalMode, LocalTask } from '../../local/emulator/local-mode.js';
import type { Execution } from '../../local/emulator/state-machine.js';
import type { TaskName } from '../../infra/tasks.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import {
  finished,
  type FinishedRun,
  modelObjects,
  nextExecution,
  RUN_TIMEOUT_MS,
  statesEntered,
  useLocalMode,
  wrapOnly,
} from '../helpers/local-mode.js';
import { expectCopied, expectSucceeded } from '../helpers/local-runs.js';
import { putDrop } from '../helpers/pipeline.js';
import { gate, withTimeout } from '../../testkit/timeout.js';
import { REVIEWS_FILES as DATA } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** S3's ETag of a PutObject: the MD5 of its bytes. */
function md5(body: string): string {
  return createHash('md5').update(body).digest('hex');
}

/** Holds the first invocation of `task` by the run `runId()` names until release() is called. */
function holdAt(task: TaskName): {
  readonly wrapTask: (name: TaskName, lambda: LocalTask) => LocalTask;
  readonly reached: Promise<void>;
  hold(runId: string): void;
  release(): void;
} {
  let heldRun: string | undefined;
  let held = false;
  const released = gate();
  const reached = gate();
  return {
    wrapTask: wrapOnly(task, (lambda) => async (input) => {
      if (!held && (input as RunState).run.runId === heldRun) {
        held = true;
        reached.open();
        await released.opened;
      }
      return lambda(input);
    }),
    reached: reached.opened,
    hold(runId) {
      heldRun = runId;
    },
    release() {
      released.open();
    },
  };
}

/** Resolves once status/<drop>.json belongs to `runId` and passes `also` (bounded). */
async function statusTakenBy(
  local: LocalMode,
  drop: string,
  runId: string,
  also: (status: RunStatus) => boolean = () => true,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<RunStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await readStatus(local.s3.client, local.bucket, drop);
    if (status?.run_id === runId && also(status)) return status;
    if (Date.now() > deadline) throw new Error(`status/${drop}.json was not taken by ${runId}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The report the run ended with ($.report of the execution's output). */
function reportOf(run: FinishedRun): ReportSlot | undefined {
  return run.outcome.status === 'SUCCEEDED' ? (run.outcome.output as RunState).report : undefined;
}

async function runsListed(local: LocalMode, drop: string): Promise<RunSummary[]> {
  const listed = await runCommandCaptured(runRunsCommand, [drop, '--json'], settingsOf(local));
  expect(listed).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(listed.stdout) as RunSummary[];
}

/**
 * Drops the folder, holds its run at `task`, uploads train.json again, lets the first run go once
 * the second has taken the status file; resolves when both have ended.
 */
async function redropAt(
  local: LocalMode,
  holder: ReturnType<typeof holdAt>,
  drop: string,
  releaseWhen?: (status: RunStatus, firstRunId: string) => boolean,
  secondTrainJson = '{}',
): Promise<{ first: FinishedRun; second: FinishedRun }> {
  const key = inboxKey(drop, TRAIN_JSON);
  const firstStarted = nextExecution(local, key);
  await putDrop(local.s3.client, local.bucket, drop, { ...DATA, [TRAIN_JSON]: '{}' });
  const firstExecution = await firstStarted.execution;
  holder.hold(firstExecution.name);
  await withTimeout(holder.reached, 'the first run did not reach the held step', RUN_TIMEOUT_MS);

  const secondStarted = nextExecution(local, key);
  await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: secondTrainJson });
  const secondExecution = await secondStarted.execution;
  await statusTakenBy(local, drop, secondExecution.name, (status) =>
    releaseWhen === undefined ? true : releaseWhen(status, firstExecution.name),
  );
  holder.release();
  const [first, second] = await Promise.all([
    finished(local, firstExecution, firstStarted.events),
    finished(local, secondExecution, secondStarted.events),
  ]);
  // Read after both ended: the status file as the user finds it.
  const status = await readStatus(local.s3.client, local.bucket, drop);
  return { first: { ...first, status }, second: { ...second, status } };
}

describe('train.json uploaded again before the first run trains: the first run stops, spends nothing', () => {
  // Datasets made: a dataset still taking files is the first run's alone (it may be uploading to
  // it); one past its uploads the newer run takes (adoption.ts).
  const cases: readonly [string, TaskName, string, number][] = [
    ['before its upload ends', 'UploadFiles', 'upload_files', 2],
    ['while it labels', 'LabelExamples', 'label_examples', 1],
  ];
  for (const [when, task, stage, datasets] of cases) {
    it(when, async () => {
      const holder = holdAt(task);
      const local = await fixture.start({ wrapTask: holder.wrapTask });
      const drop = `redrop-${task.toLowerCase()}`;
      const { first, second } = await redropAt(local, holder, drop);

      // The first run gave way at the step it was held before: no training, no model.
      expect(first.outcome.status).toBe('SUCCEEDED');
      expect(reportOf(first)?.outcome).toBe('superseded');
      expect(reportOf(first)?.error?.code).toBe('superseded');
      expect(reportOf(first)?.error?.message).toContain(`this run stopped before ${stage}`);
      expect(reportOf(first)?.error?.message).toContain('it spent no credit');
      const route = statesEntered(first.events);
      expect(route).not.toContain('StartTraining');
      expect(route.slice(-3)).toEqual(['Report', 'RunSucceeded', 'Superseded']);

      // The second run trained the drop; the status file is its, and names the first run.
      const modelId = expectSucceeded(second.status, second.execution.name);
      expect(second.status?.superseded_runs).toEqual([
        expect.objectContaining({
          run_id: first.execution.name,
          state: 'superseded',
          credits: 0,
          model_id: null,
          error: expect.objectContaining({ code: 'superseded' }) as unknown,
        }),
      ]);
      const objects = await modelObjects(local, drop);
      expect([...objects.keys()].sort()).toEqual([`${modelId}/model.json`, `${modelId}/model.onnx`]);
      expectCopied(objects, modelId, second.execution.name);
      expect(local.simulated?.requestCount('createDataset')).toBe(datasets);
      expect(second.status?.resumed_from).toBe(datasets === 1 ? first.execution.name : null);
      expect(local.simulated?.requestCount('startTraining')).toBe(1);
      expect(local.simulated?.credits()).toBe(9);

      const runs = await runsListed(local, drop);
      expect(runs.map((run) => [run.run_id, run.outcome, run.credits, run.model_id])).toEqual([
        [second.execution.name, 'succeeded', 1, modelId],
        [first.execution.name, 'superseded', 0, null],
      ]);
    });
  }
});

describe('train.json uploaded again while the newer run waits for its folder to settle', () => {
  it("the newer run shows at once (the trigger's first status), before its folder settled, and the older run gives way at its next step: one training", async () => {
    const holder = holdAt('UploadFiles');
    // The newer run is held before its next step, whose status write would replace validate_drop's.
    const newer = holdAt('CreateDataset');
    const wrapTask = (name: TaskName, task: LocalTask) => newer.wrapTask(name, holder.wrapTask(name, task));
    const local = await fixture.start({ wrapTask, dropQuietMs: 2_000 });
    const drop = 'redrop-settling';
    const key = inboxKey(drop, TRAIN_JSON);
    const firstStarted = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, drop, { ...DATA, [TRAIN_JSON]: '{}' });
    const firstExecution = await firstStarted.execution;
    holder.hold(firstExecution.name);
    await withTimeout(holder.reached, 'the first run did not reach UploadFiles', RUN_TIMEOUT_MS);

    const secondStarted = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: '{"maxAttempts": 2}' });
    const secondExecution = await secondStarted.execution;
    newer.hold(secondExecution.name);
    // As its execution starts, its folder still to settle (2 s quiet): nothing validated yet.
    expect(await readStatus(local.s3.client, local.bucket, drop)).toMatchObject({
      run_id: secondExecution.name,
      state: 'running',
      hopper_step: 'validate_drop',
      files: null,
    });
    // Once it settled, validate_drop's status names the files it takes.
    await withTimeout(newer.reached, 'the newer run did not reach CreateDataset', RUN_TIMEOUT_MS);
    const shown = await statusTakenBy(local, drop, secondExecution.name, () => true, RUN_TIMEOUT_MS);
    expect(shown).toMatchObject({ state: 'running', hopper_step: 'validate_drop', files: ['reviews.csv'] });
    holder.release();
    newer.release();
    const [first, second] = await Promise.all([
      finished(local, firstExecution, firstStarted.events),
      finished(local, secondExecution, secondStarted.events),
    ]);

    expect(reportOf(first)?.outcome).toBe('superseded');
    expect(reportOf(first)?.error?.message).toContain('this run stopped before upload_files');
    expect(statesEntered(first.events)).not.toContain('StartTraining');
    expectSucceeded(second.status, second.execution.name);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
  });
});

/** The id of the model the run ended with ($.model of its output), or ''. */
function modelOf(run: FinishedRun): string {
  return (run.outcome.status === 'SUCCEEDED' && (run.outcome.output as RunState).model?.id) || '';
}

describe('the same train.json uploaded again once the first run holds a credit: the newer run adopts its model', () => {
  const cases: readonly [string, TaskName, Parameters<typeof fixture.start>[0]][] = [
    ['while it trains', 'PollModel', { simulated: { queuedMs: 20, trainingMs: 6000 } }],
    ['while it copies', 'CopyModel', {}],
  ];
  for (const [when, task, options] of cases) {
    it(`${when}: one training, one credit, one model, the newer run's`, async () => {
      const holder = holdAt(task);
      const local = await fixture.start({ ...options, wrapTask: holder.wrapTask });
      const drop = `redrop-same-${task.toLowerCase()}`;
      const { first, second } = await redropAt(local, holder, drop);

      // The first run finished its paid training and copied it; the newer run adopted it.
      expect(reportOf(first)?.outcome).toBe('superseded');
      const model = modelOf(first);
      expect(expectSucceeded(second.status, second.execution.name)).toBe(model);
      expect(second.status?.dataset_id).toBe(second.status?.superseded_runs?.[0]?.dataset_id);
      expect(second.status?.summary).toMatchObject({
        credits: 0,
        trainings: [{ model_id: model, paid_by: first.execution.name }],
      });
      const objects = await modelObjects(local, drop);
      expect([...objects.keys()].sort()).toEqual([`${model}/model.json`, `${model}/model.onnx`]);
      expect(local.simulated?.requestCount('createDataset')).toBe(1);
      expect(local.simulated?.requestCount('startTraining')).toBe(1);
      expect(local.simulated?.credits()).toBe(9);
      const runs = await runsListed(local, drop);
      expect(runs.map((run) => [run.run_id, run.outcome, run.credits, run.model_id])).toEqual([
        [second.execution.name, 'succeeded', 0, model],
        [first.execution.name, 'superseded', 1, model],
      ]);
    });
  }
});

describe('the same train.json uploaded again as the first run is about to train: the newer run takes its dataset', () => {
  it('the first run stops before it pays (its training_intent named the dataset); one dataset, one training, the newer run’s', async () => {
    const holder = holdAt('StartTraining');
    const local = await fixture.start({ wrapTask: holder.wrapTask });
    const drop = 'redrop-about-to-train';
    const { first, second } = await redropAt(local, holder, drop);

    expect(reportOf(first)?.outcome).toBe('superseded');
    expect(reportOf(first)?.error?.message).toContain('this run stopped before start_training');
    const model = expectSucceeded(second.status, second.execution.name);
    const firstEntry = second.status?.superseded_runs?.[0];
    expect(firstEntry).toMatchObject({ run_id: first.execution.name, credits: 0, model_id: null });
    expect(second.status?.dataset_id).toBe(firstEntry?.dataset_id);
    expect(second.status?.summary).toMatchObject({ credits: 1, trainings: [{ model_id: model }] });
    expect(local.simulated?.requestCount('createDataset')).toBe(1);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.credits()).toBe(9);
  });
});

describe('the same train.json uploaded again while the first run labels: the newer run shows at once', () => {
  it('the first run gives way at its next step, before it pays; the newer run trains its dataset: one dataset, one training, one credit', async () => {
    const holder = holdAt('LabelExamples');
    let firstRun = '';
    // The first run is let go once the newer run's ValidateDrop starts: by then the trigger has
    // written the newer run's first status, which the first run's next step reads.
    const letGo = wrapOnly('ValidateDrop', (lambda) => async (input) => {
      if (firstRun !== '' && (input as RunState).run.runId !== firstRun) holder.release();
      return lambda(input);
    });
    const wrapTask = (name: TaskName, task: LocalTask) => letGo(name, holder.wrapTask(name, task));
    const local = await fixture.start({ wrapTask });
    const drop = 'redrop-while-labelling';
    const key = inboxKey(drop, TRAIN_JSON);
    const firstStarted = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, drop, { ...DATA, [TRAIN_JSON]: '{}' });
    const firstExecution = await firstStarted.execution;
    firstRun = firstExecution.name;
    holder.hold(firstExecution.name);
    await withTimeout(holder.reached, 'the first run did not reach LabelExamples', RUN_TIMEOUT_MS);
    const secondStarted = nextExecution(local, key);
    await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: '{}' });
    const secondExecution = await secondStarted.execution;
    const [first, second] = await Promise.all([
      finished(local, firstExecution, firstStarted.events),
      finished(local, secondExecution, secondStarted.events),
    ]);
    const status = await readStatus(local.s3.client, local.bucket, drop);

    expect(reportOf(first)?.outcome).toBe('superseded');
    expect(statesEntered(first.events)).not.toContain('StartTraining');
    const model = expectSucceeded(status, second.execution.name);
    expect(status?.superseded_runs?.[0]).toMatchObject({ run_id: first.execution.name, credits: 0 });
    expect(status?.summary).toMatchObject({ credits: 1, trainings: [{ model_id: model }] });
    // The newer run took the first run's dataset, which was past its uploads: no second dataset.
    expect(local.simulated?.requestCount('createDataset')).toBe(1);
    expect(status?.resumed_from).toBe(first.execution.name);
    expect(status?.dataset_id).toEqual(status?.superseded_runs?.[0]?.dataset_id);
    expect(status?.dataset_id).toEqual(expect.any(String));
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.credits()).toBe(9);
    const objects = await modelObjects(local, drop);
    expect([...objects.keys()].sort()).toEqual([`${model}/model.json`, `${model}/model.onnx`]);
  });
});

describe('a changed train.json uploaded once the first run holds a credit: it finishes, its model is kept', () => {
  it('while it trains: the second run waits for that training to end, then trains its own', async () => {
    const holder = holdAt('PollModel');
    // A training long enough for the second run to reach start_training while it is under way;
    // the first run is let go once the second one's status says it waits for it.
    const local = await fixture.start({
      wrapTask: holder.wrapTask,
      simulated: { queuedMs: 20, trainingMs: 6000 },
    });
    const drop = 'redrop-training';
    const { first, second } = await redropAt(
      local,
      holder,
      drop,
      (status, firstRunId) => status.waiting_for?.run_id === firstRunId,
      '{"maxAttempts": 2}',
    );

    const kept = reportOf(first);
    expect(kept?.outcome).toBe('superseded');
    expect(kept?.error?.message).toContain('held a credit, so this run finished it');
    const firstModel = modelOf(first);
    expect(kept?.error?.message).toContain(`models/${drop}/${firstModel}/model.onnx`);
    expect(statesEntered(first.events)).toContain('CopyModel');

    // The second run's dataset waited, saying for whom, while the first run's training went on.
    const waited = second.events.some(
      (event) =>
        event.type === 'StateExited' &&
        (event.state.output as RunState | undefined)?.dataset?.waitingFor?.runId === first.execution.name,
    );
    expect(waited).toBe(true);
    const secondModel = expectSucceeded(second.status, second.execution.name);
    expect(secondModel).not.toBe(firstModel);

    // Both models are in the bucket, each under its own id; two credits, one per training.
    const objects = await modelObjects(local, drop);
    expect([...objects.keys()].sort()).toEqual(
      [
        `${firstModel}/model.json`,
        `${firstModel}/model.onnx`,
        `${secondModel}/model.json`,
        `${secondModel}/model.onnx`,
      ].sort(),
    );
    expectCopied(objects, firstModel, first.execution.name);
    expectCopied(objects, secondModel, second.execution.name);
    expect(local.simulated?.requestCount('startTraining')).toBe(2);
    expect(local.simulated?.credits()).toBe(8);
    expect(second.status?.superseded_runs).toEqual([
      expect.objectContaining({
        run_id: first.execution.name,
        state: 'superseded',
        credits: 1,
        model_id: firstModel,
      }),
    ]);
    const runs = await runsListed(local, drop);
    expect(runs.map((run) => [run.run_id, run.outcome, run.credits, run.model_id])).toEqual([
      [second.execution.name, 'succeeded', 1, secondModel],
      [first.execution.name, 'superseded', 1, firstModel],
    ]);
  });

  it("while it copies, its copy let go only once the newer run ended: its model is kept and recorded, the newer run's stays current", async () => {
    const holder = holdAt('CopyModel');
    const local = await fixture.start({ wrapTask: holder.wrapTask });
    const drop = 'redrop-copying';
    const { first, second } = await redropAt(
      local,
      holder,
      drop,
      (status) => status.state === 'succeeded',
      '{"maxAttempts": 2}',
    );

    expect(reportOf(first)?.outcome).toBe('superseded');
    const firstModel = modelOf(first);
    const secondModel = expectSucceeded(second.status, second.execution.name);
    expect(secondModel).not.toBe(firstModel);
    const objects = await modelObjects(local, drop);
    expect(objects.size).toBe(4);
    expectCopied(objects, firstModel, first.execution.name);
    expectCopied(objects, secondModel, second.execution.name);
    // The older run reported last; without "promote" its model does not replace the newer run's.
    const current = await readJson(local.s3.client, local.bucket, currentModelKey(drop));
    expect(current?.value).toMatchObject({ model_id: secondModel, run_id: second.execution.name });
    expect(second.status?.superseded_runs?.[0]).toMatchObject({
      run_id: first.execution.name,
      credits: 1,
      model: { onnx: expect.stringContaining(`${firstModel}/model.onnx`) as unknown },
    });
    expect(local.simulated?.credits()).toBe(8);
    const runs = await runsListed(local, drop);
    expect(runs.map((run) => [run.outcome, run.credits])).toEqual([
      ['succeeded', 1],
      ['superseded', 1],
    ]);
  });
});

describe('train.json uploaded three more times in a burst', () => {
  it('the newest run trains; the others give way; credits match the models kept; never two trainings at once', async () => {
    // The service reads a dataset for 4 s, so no run can reach StartTraining during the burst
    // even on a loaded machine (with the brisk 1 s, one did once, under a second test run).
    const local = await fixture.start({ simulated: { trainingMs: 300, readingMs: 4_000 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('no simulated service');
    const drop = 'redrop-burst';
    const key = inboxKey(drop, TRAIN_JSON);
    // Trainings under way at the service, sampled while the runs go (bounded by the runs' end).
    let inFlightMax = 0;
    const sampling = { on: true };
    const sampler = (async () => {
      while (sampling.on) {
        const answer = await fetch(`${service.apiUrl}/v1/models?limit=100`, {
          headers: { authorization: `Bearer ${service.apiKey}` },
        });
        const { data } = (await answer.json()) as { data: { status: string }[] };
        const inFlight = data.filter((model) => model.status === 'queued' || model.status === 'training');
        inFlightMax = Math.max(inFlightMax, inFlight.length);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();

    await putDrop(local.s3.client, local.bucket, drop, DATA);
    const started: ReturnType<typeof nextExecution>[] = [];
    for (let upload = 0; upload < 4; upload++) {
      const next = nextExecution(local, key);
      await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: '{}' });
      await next.execution;
      started.push(next);
    }
    const executions = await Promise.all(started.map(({ execution }) => execution));
    const runs = await Promise.all(
      executions.map((execution, index) => finished(local, execution, started[index]?.events)),
    );
    sampling.on = false;
    await sampler;

    const newest = runs[3];
    const status = await readStatus(local.s3.client, local.bucket, drop);
    const newestModel = expectSucceeded(status, newest?.execution.name ?? '');
    // Each upload came moments after the previous run started, long before any could train: the
    // older runs stopped without a training, and only the newest spent a credit.
    for (const older of runs.slice(0, 3)) {
      expect(reportOf(older)?.outcome).toBe('superseded');
      expect(reportOf(older)?.error?.message).toContain('it spent no credit');
      expect(statesEntered(older.events)).not.toContain('StartTraining');
    }

    // Each credit spent is a model kept under its run's model id: none lost, none spent twice.
    const listed = await runsListed(local, drop);
    expect(listed.map((run) => run.outcome)).toEqual(['succeeded', 'superseded', 'superseded', 'superseded']);
    const credits = listed.reduce((sum, run) => sum + (run.credits ?? Number.NaN), 0);
    const objects = await modelObjects(local, drop);
    const models = [...new Set([...objects.keys()].map((name) => name.split('/')[0]))];
    expect(models.sort()).toEqual(
      listed.flatMap((run) => (run.model_id === null ? [] : [run.model_id])).sort(),
    );
    expect(models).toContain(newestModel);
    expect(credits).toBe(models.length);
    expect(listed.map((run) => run.credits)).toEqual([1, 0, 0, 0]);
    expect(models).toEqual([newestModel]);
    expect(10 - service.credits()).toBe(credits);
    expect(service.requestCount('startTraining')).toBe(credits);
    expect(status?.superseded_runs?.map((entry) => entry.run_id).sort()).toEqual(
      runs
        .slice(0, 3)
        .map((run) => run.execution.name)
        .sort(),
    );
    expect(inFlightMax).toBe(1);
  });
});

describe('train.json uploaded twice in one second (EventBridge gives the time to the second)', () => {
  /** A train.json like `first` whose run (version `versionId`) has a run id that sorts before `firstRunId`'s. */
  function bodySortingBefore(bucket: string, key: string, firstRunId: string, versionId: string): string {
    for (let spaces = 1; spaces < 100; spaces++) {
      const body = `{${' '.repeat(spaces)}}`;
      if (executionName(bucket, key, md5(body), versionId) < firstRunId) return body;
    }
    throw new Error('no train.json found whose run id sorts first');
  }

  it('the later upload takes the drop by its sequencer, though its time and a run id that sorts first say otherwise', async () => {
    // Both runs take the folder once it is quiet, so neither trains before the other has started.
    const local = await fixture.start({ dropQuietMs: 500 });
    const drop = 'redrop-same-second';
    const key = inboxKey(drop, TRAIN_JSON);
    // A fresh local mode numbers its train.json versions from 1.
    const firstBody = '{}';
    const firstRunId = executionName(local.bucket, key, md5(firstBody), 'local-00000001');
    const laterBody = bodySortingBefore(local.bucket, key, firstRunId, 'local-00000002');
    const laterRunId = executionName(local.bucket, key, md5(laterBody), 'local-00000002');
    const started: Execution[] = [];
    local.stateMachine.on('started', (execution) => {
      if (execution.input.run.key === key) started.push(execution);
    });

    await putDrop(local.s3.client, local.bucket, drop, DATA);
    // Both uploads at the start of one second (a PutObject takes milliseconds).
    await sleep(1000 - (Date.now() % 1000));
    await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: firstBody });
    await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: laterBody });
    await withTimeout(
      (async () => {
        while (started.length < 2) await sleep(10);
      })(),
      'the two runs did not start',
      RUN_TIMEOUT_MS,
    );
    const runNamed = (name: string): Execution => {
      const found = started.find((execution) => execution.name === name);
      if (found === undefined) throw new Error(`no run ${name} started`);
      return found;
    };
    const [first, later] = [runNamed(firstRunId), runNamed(laterRunId)];
    expect(laterRunId < firstRunId).toBe(true);
    // The same time to the second: only the sequencer tells which upload came later.
    expect(first.input.run.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    expect(later.input.run.startedAt).toBe(first.input.run.startedAt);
    expect(compareSequencers(later.input.run.sequencer ?? '', first.input.run.sequencer ?? '')).toBe(1);

    const [firstRun, laterRun] = await Promise.all([finished(local, first), finished(local, later)]);
    // The later run's first status (the trigger's) came before the first run's next step, which
    // gave way before spending.
    expect(reportOf(firstRun)?.outcome).toBe('superseded');
    expectSucceeded(laterRun.status, laterRunId);
    expect(laterRun.status?.superseded_runs).toEqual([
      expect.objectContaining({ run_id: firstRunId, credits: 0, model_id: null }),
    ]);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.credits()).toBe(9);
  });
});
