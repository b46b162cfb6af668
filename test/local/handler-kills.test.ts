/**
 * Handlers killed after their side effect and before returning (issue 9): at each step's riskiest
 * point the invocation dies as Lambda's does (Sandbox.Timedout, or Runtime.ExitError for a
 * crashed runtime), the state machine runs the step again, and the run finishes with one
 * dataset, one credit, one model copied whole and no label conflict. Local mode end to end:
 * the synthesized definition, the real handlers, the local S3, the simulated service over HTTP;
 * the kills are injected where requests leave the process (test/helpers/handler-kills.ts).
 */
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { LAMBDA_TIMEOUT_ERROR } from '../../lambdas/core/errors/index.js';
import {
  HandlerKills,
  LAMBDA_CRASH_ERROR,
  LAMBDA_DEATHS,
  endpointOf,
  type KillRule,
  type SideEffect,
} from '../helpers/handler-kills.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { startLocalS3 } from '../../local/s3/local-s3.js';
import { modelBytesAt } from '../../local/service/index.js';
import {
  dropAndRun,
  modelObjects,
  serviceList,
  simulatedOf,
  statesEntered,
  useLocalMode,
} from '../helpers/local-mode.js';
import { expectSaved } from '../helpers/local-runs.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();
const opened: HandlerKills[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((kills) => kills.close()));
});

async function startWithKills(
  rules: readonly KillRule[],
  simulated = {},
): Promise<{ local: LocalMode; kills: HandlerKills }> {
  const kills = new HandlerKills({ rules });
  opened.push(kills);
  const local = await fixture.start({ ...kills.modeOptions(), simulated });
  kills.watchFunctions(local);
  return { local, kills };
}

const DROP = reviewsDrop();

const service = (endpoint: string, status: number) => (effect: SideEffect) =>
  effect.kind === 'service' && effect.endpoint === endpoint && effect.status === status;

/** The riskiest point of each step that has one: its side effect done, its answer not yet returned. */
const POINTS: readonly { name: string; task: KillRule['task']; after: () => KillRule['after'] }[] = [
  {
    name: 'after POST datasets, before the slot is returned',
    task: 'CreateDataset',
    after: () => service('POST /v1/datasets', 201),
  },
  {
    name: 'after a file PUT, before complete',
    task: 'UploadFiles',
    after: () => service('PUT /upload/{id}/{id}', 200),
  },
  {
    name: 'after POST models, before the slot is returned',
    task: 'StartTraining',
    after: () => service('POST /v1/datasets/{id}/models', 201),
  },
  {
    name: 'after a label is posted (the second)',
    task: 'LabelExamples',
    after: () => {
      let posted = 0;
      return (effect: SideEffect) =>
        service('POST /v1/datasets/{id}/labels/{id}', 200)(effect) && ++posted === 2;
    },
  },
  {
    name: 'after model.onnx is stored, before model.json',
    task: 'CopyModel',
    after: () => (effect) =>
      effect.kind === 's3' &&
      effect.key?.endsWith('/model.onnx') === true &&
      ['PutObjectCommand', 'CompleteMultipartUploadCommand'].includes(effect.command),
  },
];

describe('a handler killed after its side effect: the retried step finishes the run', () => {
  const cases = POINTS.flatMap((point) => LAMBDA_DEATHS.map((death) => ({ ...point, death })));
  it.each(cases)('$task $name ($death)', async ({ task, after, death }) => {
    const { local, kills } = await startWithKills([{ task, after: after(), death }]);
    const run = await dropAndRun(local, 'killed', DROP);

    // The kill happened where it was aimed, once.
    expect(kills.kills).toHaveLength(1);
    expect(kills.kills[0]).toMatchObject({ task, death, runId: run.execution.name });
    // The state machine retried the killed Task (a Retry, not the Catch that ends the run).
    const retried = run.events.filter((event) => event.type === 'StateRetried' && event.state.name === task);
    expect(retried).toHaveLength(1);
    expect(statesEntered(run.events)).not.toContain('RunFailed');

    // The run finished: one dataset, one credit, one model copied whole, every example labelled once.
    const { record } = await expectSaved(local, run);
    expect(local.simulated?.requestCount('createDataset')).toBe(1);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.credits()).toBe(9);
    // The one dataset at the service is the one the status names.
    const datasets = await serviceList<{ id: string }>(simulatedOf(local), 'datasets');
    expect(datasets.map((dataset) => dataset.id)).toEqual([run.status?.dataset_id]);
    // Every held-out example was answered once (a second, different answer would have been a 409).
    expect(local.simulated?.requestCount('submitLabel')).toBe(4);
    // A kill while labelling loses the killed invocation's count (see docs/reliability.md).
    if (task !== 'LabelExamples') expect(record.run.labelled).toBe(4);
  });
});

it('a multipart copy killed after CompleteMultipartUpload: the retry keeps that copy and writes model.json', async () => {
  const modelBytes = 9 * 1024 * 1024; // two parts of the copy's 8 MiB (DEFAULT_PART_BYTES)
  const { local, kills } = await startWithKills(
    [
      {
        task: 'CopyModel',
        death: LAMBDA_CRASH_ERROR,
        after: (effect) =>
          effect.kind === 's3' &&
          effect.command === 'CompleteMultipartUploadCommand' &&
          effect.key?.endsWith('/model.onnx') === true,
      },
    ],
    { modelBytes },
  );
  const run = await dropAndRun(local, 'big', DROP);

  expect(kills.kills.map((kill) => kill.task)).toEqual(['CopyModel']);
  expect(run.outcome.status).toBe('SUCCEEDED');
  const modelId = run.status?.model_id ?? '';
  const objects = await modelObjects(local, 'big');
  expect([...objects.keys()].sort()).toEqual([`${modelId}/model.json`, `${modelId}/model.onnx`]);
  expect(objects.get(`${modelId}/model.onnx`)?.equals(modelBytesAt(modelId, 0, modelBytes))).toBe(true);
  // The retry found the copy whole and did not download it again.
  expect(local.simulated?.requestCount('getDownloadLink')).toBe(1);
  expect(local.simulated?.credits()).toBe(9);
});

describe('the injection itself', () => {
  it('a killed invocation fails as Lambda reports it, and its handler sends nothing more', async () => {
    const s3 = await startLocalS3();
    try {
      const kills = new HandlerKills({
        rules: [
          {
            task: 'CopyModel',
            death: LAMBDA_TIMEOUT_ERROR,
            after: (effect) => effect.kind === 's3' && effect.key === 'first',
          },
        ],
      });
      opened.push(kills);
      kills.watch(s3.client);
      let afterTheKill = 'not reached';
      const put = (key: string) =>
        s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: key }));
      const task = kills.wrapTask('CopyModel', async () => {
        await put('first');
        afterTheKill = 'reached';
        await put('second');
        return 'done';
      });

      const error = await task({ run: { runId: 'run-1' } }).then(
        () => new Error('the invocation returned'),
        (thrown: unknown) => thrown as Error,
      );
      expect(error.name).toBe(LAMBDA_TIMEOUT_ERROR);
      expect(JSON.parse(error.message)).toMatchObject({ errorType: LAMBDA_TIMEOUT_ERROR });
      expect(afterTheKill).toBe('not reached');
      expect(kills.kills).toEqual([
        {
          runId: 'run-1',
          task: 'CopyModel',
          death: LAMBDA_TIMEOUT_ERROR,
          effect: { kind: 's3', command: 'PutObjectCommand', key: 'first' },
        },
      ]);
      const keys = (await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }))).Contents?.map(
        (object) => object.Key,
      );
      expect(keys).toEqual(['first']);

      // The same Task's next invocation in that run (the state machine's retry) is spared.
      await expect(task({ run: { runId: 'run-1' } })).resolves.toBe('done');
      expect(kills.kills).toHaveLength(1);
    } finally {
      await s3.close();
    }
  });

  it('names service endpoints with their ids replaced', () => {
    expect(endpointOf('/v1/datasets/0b4c/files/77aa/complete?x=1')).toBe(
      '/v1/datasets/{id}/files/{id}/complete',
    );
    expect(endpointOf('/v1/datasets/0b4c/labels/task-9')).toBe('/v1/datasets/{id}/labels/{id}');
    expect(endpointOf('/upload/ds/f1')).toBe('/upload/{id}/{id}');
    expect(endpointOf('/v1/encoders')).toBe('/v1/encoders');
  });
});
