/**
 * Every next_action of the contract (docs/service-contract.md, B3), reached on the simulated service and read through the
 * client, with the step the contract puts it at; and a value the contract does not know, which the
 * client names instead of crashing.
 */
import { describe, expect, it } from 'vitest';
import {
  NEXT_ACTIONS,
  UnsupportedNextActionError,
  type Dataset,
  type Model,
  type TrainingServiceClient,
} from '../../lambdas/service-client/index.js';
import type { SimulatedService } from '../../local/service/index.js';
import { allOf, HOUR, rejectionOf, trainableDataset, uploadedDataset, useFixtures } from './helpers.js';
import { csv, SAMPLE_TEXTS } from '../helpers/fixtures.js';

const fixtures = useFixtures();

type Reach = (service: SimulatedService, client: TrainingServiceClient) => Promise<Dataset | Model>;

const createdDataset: Reach = (_service, client) =>
  client.createDataset({ name: 'reviews', files: [{ name: 'reviews.csv', bytes: 10 }] });

async function trainedModel(service: SimulatedService, client: TrainingServiceClient): Promise<Model> {
  const dataset = await trainableDataset(client);
  const model = await client.startTraining(dataset.id, 'enc-small');
  service.clock.advance(1);
  return client.getModel(model.id);
}

/** How to reach each next_action, on a service with 1 s phases and a manual clock. */
const REACH: Record<keyof typeof NEXT_ACTIONS, Reach> = {
  upload_files: createdDataset,
  wait: (_service, client) => uploadedDataset(client),
  start_over: async (service, client) => {
    const dataset = await uploadedDataset(client, { 'reviews.txt': 'not a csv\n' });
    service.clock.advance(1000);
    const unreadable = await client.getDataset(dataset.id);
    expect(unreadable.error).toMatch(/^reviews\.txt: unsupported file type/);
    return unreadable;
  },
  structure: async (service, client) => {
    const dataset = await uploadedDataset(client);
    service.clock.advance(1000);
    return client.getDataset(dataset.id);
  },
  pick_decisions: async (service, client) => {
    const dataset = await uploadedDataset(client);
    service.clock.advance(1000);
    await client.suggest(dataset.id);
    return client.getDataset(dataset.id);
  },
  label_examples: async (service, client) => {
    const dataset = await uploadedDataset(client);
    service.clock.advance(1000);
    await client.structure(dataset.id);
    service.clock.advance(1000);
    return client.getDataset(dataset.id);
  },
  start_training: async (service, client) => {
    service.configure({ readingMs: 0, structuringMs: 0 });
    return trainableDataset(client);
  },
  retry: async (service, client) => {
    service.configure({ readingMs: 0, structuringMs: 0, queuedMs: 0, trainingMs: 0, failTrainings: 1 });
    return trainedModel(service, client);
  },
  download: async (service, client) => {
    service.configure({ readingMs: 0, structuringMs: 0, queuedMs: 0, trainingMs: 0 });
    return trainedModel(service, client);
  },
  none: async (service, client) => {
    service.configure({ readingMs: 0, structuringMs: 0, queuedMs: 0, trainingMs: 0 });
    const model = await trainedModel(service, client);
    service.clock.advance(25 * HOUR);
    return client.getModel(model.id);
  },
  expired: async (service, client) => {
    const dataset = await createdDataset(service, client);
    service.clock.advance(8 * 24 * HOUR);
    return client.getDataset(dataset.id);
  },
};

describe('every next_action, read through the client', () => {
  it.each(Object.entries(NEXT_ACTIONS))('%s, at the step B3 gives it', async (nextAction, rule) => {
    const service = await fixtures.service({ readingMs: 1000, structuringMs: 1000, queuedMs: 1000 });
    const client = fixtures.client(service);
    const record = await REACH[nextAction as keyof typeof NEXT_ACTIONS](service, client);
    expect(record.next_action).toBe(nextAction);
    expect(rule.steps).toContain(record.step);
    if (rule.record !== 'any') expect(record.kind).toBe(rule.record);
  });

  it('a model at wait is step 4', async () => {
    const service = await fixtures.service({ queuedMs: 1000 });
    const client = fixtures.client(service);
    const dataset = await trainableDataset(client);
    const model = await client.startTraining(dataset.id, 'enc-small');
    expect(model).toMatchObject({ kind: 'model', step: 4, next_action: 'wait', status: 'queued' });
  });
});

describe('a next_action the contract does not know', () => {
  it('is an UnsupportedNextActionError naming the value, from a single record and from a list', async () => {
    const service = await fixtures.service({
      readingMs: 1000,
      renameNextActions: { structure: 'summon_wizard' },
    });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client, { 'reviews.csv': csv(SAMPLE_TEXTS) });
    service.clock.advance(1000);

    const fromGet = await rejectionOf(client.getDataset(dataset.id));
    expect(fromGet).toBeInstanceOf(UnsupportedNextActionError);
    expect((fromGet as UnsupportedNextActionError).message).toContain(
      'unsupported next_action: summon_wizard',
    );
    expect(fromGet).toMatchObject({ retryable: false, nextAction: 'summon_wizard' });

    const fromList = await rejectionOf(allOf(client.listDatasets()));
    expect(fromList).toBeInstanceOf(UnsupportedNextActionError);
    // Nothing was retried: the answer is final.
    expect(service.requestCount('getDataset')).toBe(1);
  });
});
