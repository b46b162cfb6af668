import { describe, expect, it } from 'vitest';
import { toRunError, RunError } from '../../lambdas/core/errors/index.js';
import { createDatasetStep } from '../../lambdas/steps/create-dataset.js';
import { DEFAULT_OPTIONS } from '../../local/service/index.js';
import { allOf, CLOCK_START, rejectionOf } from '../client/helpers.js';
import { putJson } from '../../lambdas/storage/objects.js';
import { stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, datasetSlotOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

describe('create_dataset', () => {
  it("declares the config's files by name and size; the dataset waits for its uploads", async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const config = configOf({
      name: 'my reviews',
      files: [
        { name: 'a.csv', bytes: 10, etag: 'e1' },
        { name: 'b.jsonl', bytes: 0, etag: 'e2' },
      ],
    });

    const slot = await createDatasetStep.run(stateOf(fixtures.s3().bucket, { config }), stepEnv(runtime));

    // At upload_files, step 1, not waiting, expiring after the service's dataset TTL.
    expect(slot).toEqual(
      datasetSlotOf({
        id: expect.any(String) as string,
        expiresAt: new Date(Date.parse(CLOCK_START) + DEFAULT_OPTIONS.datasetTtlMs).toISOString(),
      }),
    );
    const record = await (await runtime.service()).getDataset(slot.id);
    expect(record.name).toMatch(/^my reviews · run [0-9a-f]{12}$/);
    expect(record.files.map(({ name, bytes, status }) => ({ name, bytes, status }))).toEqual([
      { name: 'a.csv', bytes: 10, status: 'pending' },
      { name: 'b.jsonl', bytes: 0, status: 'pending' },
    ]);
  });

  it("a retried invocation finds the run's dataset at the service: one dataset", async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const state = stateOf(fixtures.s3().bucket, { config: configOf() });

    const first = await createDatasetStep.run(state, stepEnv(runtime));
    const second = await createDatasetStep.run(state, stepEnv(runtime));

    expect(second.id).toBe(first.id);
    expect(service.requestCount('createDataset')).toBe(1);
    // Another run of the same drop and name has a dataset of its own.
    const other = stateOf(
      fixtures.s3().bucket,
      { config: configOf() },
      { drop: state.run.drop, runId: 'other-run' },
    );
    expect((await createDatasetStep.run(other, stepEnv(runtime))).id).not.toBe(first.id);
  });

  it.each(['html_502', 'truncated', 'empty'] as const)(
    'a creation answer garbled after the service acted (%s): the dataset it made is found by name, none is created again',
    async (form) => {
      const service = await fixtures.service({
        faults: [{ endpoint: 'createDataset', kind: 'garble', form, count: 1 }],
      });
      const runtime = fixtures.runtime(service);
      const state = stateOf(fixtures.s3().bucket, { config: configOf() });

      const slot = await createDatasetStep.run(state, stepEnv(runtime));

      const client = await runtime.service();
      const datasets = await allOf(client.listDatasets({ limit: 100 }));
      expect(datasets.map((dataset) => dataset.id)).toEqual([slot.id]);
      expect(service.requestCount('createDataset')).toBe(1);
    },
  );

  it('a train.json changed in the bucket since the run began stops it before it creates: superseded, no dataset', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const { bucket, client: s3 } = fixtures.s3();
    const state = stateOf(bucket, { config: configOf() });
    // The run began from its own etag; another train.json (another etag) is there now.
    await putJson(s3, bucket, state.run.key, { maxAttempts: 2 });

    const stopped = toRunError(await rejectionOf(createDatasetStep.run(state, stepEnv(runtime))));

    expect(stopped).toMatchObject({ code: 'superseded', retryable: false });
    expect(stopped.message).toMatch(
      /a newer train\.json of drop "[^"]+" \(run [A-Za-z0-9_-]+-[0-9a-f]{32}, uploaded /,
    );
    expect(stopped.message).toContain('create_dataset');
    expect(service.requestCount('createDataset')).toBe(0);
  });

  it('an earlier run’s dataset taken alone (datasetOnly) that is gone: this run creates its own; a resume of it fails', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);
    const bucket = fixtures.s3().bucket;
    const from = { runId: 'earlier-run', datasetId: 'ds-gone', errorCode: null };

    const adopted = stateOf(bucket, { config: configOf({ resumeFrom: { ...from, datasetOnly: true } }) });
    const slot = await createDatasetStep.run(adopted, stepEnv(runtime));

    expect(slot.id).not.toBe('ds-gone');
    expect(service.requestCount('createDataset')).toBe(1);
    const resumed = stateOf(bucket, { config: configOf({ resumeFrom: from }) });
    const refused = toRunError(await rejectionOf(createDatasetStep.run(resumed, stepEnv(runtime))));
    expect(refused).toMatchObject({ code: 'not_resumable' });
    expect(service.requestCount('createDataset')).toBe(1);
  });

  it('a service that stays unavailable fails retryable without sending the creation twice', async () => {
    const service = await fixtures.service({
      faults: [{ endpoint: 'createDataset', kind: '503', count: 100 }],
    });
    const runtime = fixtures.runtime(service);

    const error = toRunError(
      await rejectionOf(
        createDatasetStep.run(stateOf(fixtures.s3().bucket, { config: configOf() }), stepEnv(runtime)),
      ),
    );

    // A 503 does not say the dataset was not made: the next invocation looks for it first.
    expect(error).toMatchObject({ code: 'service_unavailable', retryable: true, name: 'Hopper.Retryable' });
    expect(service.requestCount('createDataset')).toBe(1);
  });

  it('without $.config it fails as a bug of the definition, before calling the service', async () => {
    const service = await fixtures.service();
    const runtime = fixtures.runtime(service);

    const error = await rejectionOf(createDatasetStep.run(stateOf(fixtures.s3().bucket), stepEnv(runtime)));

    expect(error).toBeInstanceOf(RunError);
    expect(error).toMatchObject({ code: 'internal_error', retryable: false });
    expect((error as RunError).message).toContain('$.config');
    expect(service.requestCount('createDataset')).toBe(0);
  });
});
