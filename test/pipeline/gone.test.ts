/**
 * The one rule for a record of the run gone at the service (lambdas/core/errors/gone.ts), against the
 * simulated service: a 404 is reported as the record gone only when the record itself answers
 * 404; dataset_expired instead of dataset_gone once the dataset's expiry has passed.
 */
import { describe, expect, it } from 'vitest';
import { goneRecordError } from '../../lambdas/core/errors/index.js';
import { datasetSlot, modelSlot, trainingPlan } from '../../lambdas/core/state/index.js';
import { NotFoundError, ServerError } from '../../lambdas/service-client/index.js';
import { HOUR, rejectionOf, trainableDataset, uploadedDataset } from '../client/helpers.js';
import { usePipelineFixtures } from '../helpers/pipeline.js';
import { stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

async function setUp() {
  const service = await fixtures.service({ readingMs: 0, structuringMs: 0 });
  const client = await fixtures.runtime(service).service();
  return { service, client, connect: () => Promise.resolve(client) };
}

describe('goneRecordError', () => {
  it('a 404 under a dataset that is still there (an unknown label task) is not the dataset gone', async () => {
    const { service, client, connect } = await setUp();
    const dataset = await uploadedDataset(client);
    await client.structure(dataset.id);
    const error = await rejectionOf(client.submitLabel(dataset.id, 'no-such-task', 'positive'));
    expect(error).toBeInstanceOf(NotFoundError);
    const state = stateOf(fixtures.s3().bucket, {
      dataset: datasetSlot(dataset, undefined, service.clock.now()),
    });
    expect(
      await goneRecordError(state, 'label_examples', error, connect, service.clock.now()),
    ).toBeUndefined();
  });

  it('the dataset answering 404: dataset_gone before its expiry, dataset_expired after it', async () => {
    const { service, client, connect } = await setUp();
    const dataset = await uploadedDataset(client);
    const state = stateOf(fixtures.s3().bucket, {
      dataset: datasetSlot(dataset, undefined, service.clock.now()),
    });
    service.deleteRecord('dataset', dataset.id);
    const error = await rejectionOf(client.nextLabelTask(dataset.id));

    const gone = await goneRecordError(state, 'label_examples', error, connect, service.clock.now());
    expect(gone).toMatchObject({ code: 'dataset_gone', retryable: false });
    expect(gone?.detail).toContain(
      `dataset ${dataset.id} is gone at the service (GET /v1/datasets/{dataset}/labels/next answered 404 not_found while its examples were labelled)`,
    );
    const afterExpiry = Date.parse(dataset.expires_at) + HOUR;
    const expired = await goneRecordError(state, 'label_examples', error, connect, afterExpiry);
    expect(expired).toMatchObject({ code: 'dataset_expired' });
    expect(expired?.detail).toContain(`it expired at ${dataset.expires_at} and the service purged it`);
  });

  it('the model answering 404: model_gone, its credit spent; other errors are left as they are', async () => {
    const { service, client, connect } = await setUp();
    const dataset = await trainableDataset(client);
    const model = await client.startTraining(dataset.id, (await client.defaultEncoder()).id);
    const state = stateOf(fixtures.s3().bucket, {
      model: modelSlot(model, trainingPlan(1, 3), undefined, service.clock.now()),
    });
    service.deleteRecord('model', model.id);
    const error = await rejectionOf(client.getModel(model.id));

    const gone = await goneRecordError(state, 'poll_model', error, connect, service.clock.now());
    expect(gone).toMatchObject({ code: 'model_gone', retryable: false });
    expect(gone?.detail).toContain(`model ${model.id} is gone at the service`);
    expect(gone?.detail).toContain('paid for with 1 credit, which is spent');
    const other = new ServerError({ message: 'boom', endpoint: 'GET /v1/models/{model}', status: 500 });
    expect(await goneRecordError(state, 'poll_model', other, connect, service.clock.now())).toBeUndefined();
  });
});
