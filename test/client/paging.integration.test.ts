/**
 * Cursor paging over more than one page of the simulated service, filters, and the models of
 * one dataset found newest first.
 */
import { describe, expect, it } from 'vitest';
import type { TrainingServiceClient } from '../../lambdas/service-client/index.js';
import { allOf, HOUR, trainableDataset, useFixtures } from './helpers.js';

const fixtures = useFixtures();

async function createDatasets(client: TrainingServiceClient, count: number, prefix = 'd'): Promise<string[]> {
  const ids = [];
  for (let i = 0; i < count; i++) {
    ids.push(
      (await client.createDataset({ name: `${prefix}${i}`, files: [{ name: 'a.csv', bytes: 1 }] })).id,
    );
  }
  return ids;
}

describe('lists', () => {
  it('iterates more than 100 datasets newest first, a page at a time', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const ids = await createDatasets(client, 130);

    const all = [];
    for await (const dataset of client.listDatasets()) all.push(dataset.id);
    expect(all).toEqual([...ids].reverse());
    expect(service.requestCount('listDatasets')).toBe(6); // 25 a page by default

    const sizes = [];
    for await (const page of client.listDatasets({ limit: 100 }).pages()) sizes.push(page.data.length);
    expect(sizes).toEqual([100, 30]);
  });

  it('keeps later pages still while new records arrive at the top', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const ids = await createDatasets(client, 5);
    const seen = [];
    for await (const page of client.listDatasets({ limit: 2 }).pages()) {
      seen.push(...page.data.map((dataset) => dataset.id));
      await client.createDataset({ name: 'late', files: [{ name: 'a.csv', bytes: 1 }] });
    }
    expect(seen).toEqual([...ids].reverse());
  });

  it('passes status and usable filters, and follows cursors bound to them', async () => {
    const service = await fixtures.service({ datasetTtlMs: HOUR });
    const client = fixtures.client(service);
    const old = await createDatasets(client, 3, 'old');
    service.clock.advance(HOUR);
    const fresh = await createDatasets(client, 3, 'new');

    const usable = await allOf(client.listDatasets({ usable: true, limit: 1 }));
    expect(usable.map((dataset) => dataset.id)).toEqual([...fresh].reverse());
    const expired = await allOf(client.listDatasets({ status: 'expired', limit: 2 }));
    expect(expired.map((dataset) => dataset.id)).toEqual([...old].reverse());
    expect(await allOf(client.listDatasets({ status: 'ready' }))).toEqual([]);
  });

  it('finds the models of one dataset among more than 100, newest first', async () => {
    const service = await fixtures.service({ heldOutCount: 0, credits: 200 });
    const client = fixtures.client(service);
    const first = await trainableDataset(client, 'first');
    const second = await trainableDataset(client, 'second');
    for (let i = 0; i < 60; i++) {
      await client.startTraining(first.id, 'enc-small');
      await client.startTraining(second.id, 'enc-base');
    }
    const listed = service.requestCount('listModels');
    const versions = [];
    for await (const model of client.modelsOfDataset(first.id)) {
      expect(model.dataset_id).toBe(first.id);
      versions.push(model.version);
    }
    expect(versions).toEqual(Array.from({ length: 60 }, (_, i) => 60 - i));
    expect(service.requestCount('listModels') - listed).toBe(2);

    const done = await allOf(client.listModels({ status: 'done', usable: true, limit: 100 }));
    expect(done).toHaveLength(120);
  });

  it('stops paging at models older than the dataset when given its created_at', async () => {
    const service = await fixtures.service({ heldOutCount: 0, credits: 200 });
    const client = fixtures.client(service);
    const older = await trainableDataset(client, 'older');
    for (let i = 0; i < 120; i++) await client.startTraining(older.id, 'enc-small');
    service.clock.advance(1000);
    const newer = await trainableDataset(client, 'newer');
    await client.startTraining(newer.id, 'enc-small');
    await client.startTraining(newer.id, 'enc-small');

    const listed = service.requestCount('listModels');
    const versions = [];
    for await (const model of client.modelsOfDataset(newer.id, { datasetCreatedAt: newer.created_at })) {
      versions.push(model.version);
    }
    expect(versions).toEqual([2, 1]);
    expect(service.requestCount('listModels') - listed).toBe(1);
  });
});
