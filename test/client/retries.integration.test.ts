/**
 * Retries against injected faults, counted with service.requestCount, and the ambiguity rules:
 * a training start (which spends a credit) is never sent twice unless the first provably did
 * not arrive; structure, complete, suggest and labels survive a lost answer.
 */
import { describe, expect, it } from 'vitest';
import type { FaultRule } from '../../local/service/index.js';
import {
  ConflictError,
  ConnectionError,
  RateLimitedError,
  RetryLaterError,
  ServerError,
  TimeoutError,
  UnavailableError,
  type ServiceError,
} from '../../lambdas/service-client/index.js';
import {
  allOf,
  refusingUrl,
  rejectionOf,
  trainableDataset,
  uploadedDataset,
  useFixtures,
} from './helpers.js';

const fixtures = useFixtures();

describe('transient failures are retried', () => {
  const kinds: FaultRule['kind'][] = ['429', '500', '503', 'drop', 'drop_after', 'stall'];

  it.each(kinds)('%s twice, then success on the third request', async (kind) => {
    const service = await fixtures.service();
    // Only a stall needs a short timeout, and even that one leaves a loaded machine time to answer
    // the healthy requests (at 200 ms, one of them timed out too and made a fourth request).
    const client = fixtures.client(service, kind === 'stall' ? { timeoutMs: 1_000 } : {});
    const dataset = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    service.configure({
      faults: [{ endpoint: 'getDataset', kind, count: 2, stallMs: 10_000, retryAfterSeconds: 0 }],
    });
    expect((await client.getDataset(dataset.id)).id).toBe(dataset.id);
    expect(service.requestCount('getDataset')).toBe(3);
    expect(client.slept).toHaveLength(2);
  });

  it('waits full-jitter backoff between attempts: random(0, min(cap, base * 2^n))', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { backoffBaseMs: 100, backoffCapMs: 300, random: () => 0.5 });
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '503', count: 4 }] });
    await client.listEncoders();
    expect(client.slept).toEqual([50, 100, 150, 150]);
  });

  it('honours Retry-After up to maxRetryAfterMs; a longer one ends the call with RetryLaterError, not sooner retries', async () => {
    const service = await fixtures.service();
    // random 0: no jitter on top of Retry-After (retry.test.ts checks the spread).
    const client = fixtures.client(service, { maxRetryAfterMs: 2500, random: () => 0 });
    service.configure({
      faults: [{ endpoint: 'listEncoders', kind: '429', count: 1, retryAfterSeconds: 2 }],
    });
    await client.listEncoders();
    expect(client.slept).toEqual([2000]);
    service.configure({
      faults: [{ endpoint: 'listEncoders', kind: '429', count: 1, retryAfterSeconds: 30 }],
    });
    const error = await rejectionOf(client.listEncoders());
    expect(error).toBeInstanceOf(RetryLaterError);
    expect(error).toMatchObject({ code: 'retry_later', retryable: false, retryAfterMs: 30_000, status: 429 });
    expect((error as Error).message).toBe(
      'GET /v1/encoders: the service asked to be called again in 30 s (Retry-After on a 429 answer), longer than a call waits (3 s)',
    );
    expect(client.slept).toEqual([2000]);
    expect(service.requestCount('listEncoders')).toBe(3);
  });

  it('stops after maxRetries and throws the last failure', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service, { maxRetries: 3 });
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '503', count: 10 }] });
    const error = await rejectionOf(client.listEncoders());
    expect(error).toBeInstanceOf(UnavailableError);
    expect(service.requestCount('listEncoders')).toBe(4);
    expect(client.slept).toHaveLength(3);
  });

  it('logs each retry as a warning, without the API key', async () => {
    const service = await fixtures.service({ apiKey: 'sk-test-logs-9d2f' });
    const lines: string[] = [];
    const logger = { debug: (line: string) => lines.push(line), warn: (line: string) => lines.push(line) };
    const client = fixtures.client(service, { logger });
    service.configure({ faults: [{ endpoint: 'listEncoders', kind: '500', count: 1 }] });
    await client.listEncoders();
    expect(lines).toContain(`GET /v1/encoders: server_error (500); retry 1 of 5 in ${client.slept[0]} ms`);
    expect(lines.join('\n')).not.toContain('sk-test-logs-9d2f');
  });

  it('keeps paging through a list when a page request fails once', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    for (let i = 0; i < 5; i++)
      await client.createDataset({ name: `d${i}`, files: [{ name: 'a.csv', bytes: 1 }] });
    service.configure({ faults: [{ endpoint: 'listDatasets', kind: 'drop', count: 1 }] });
    const names = [];
    for await (const dataset of client.listDatasets({ limit: 2 })) names.push(dataset.name);
    expect(names).toEqual(['d4', 'd3', 'd2', 'd1', 'd0']);
    expect(service.requestCount('listDatasets')).toBe(4);
  });
});

describe('final errors are never retried', () => {
  it('404, 401, 400 and 409 are sent once', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    await rejectionOf(client.getModel('00000000-0000-4000-8000-000000000000'));
    await rejectionOf(fixtures.client(service, { apiKey: 'wrong' }).getDataset(dataset.id));
    await rejectionOf(client.createDataset({ name: 'd', files: [] }));
    await rejectionOf(client.suggest(dataset.id));
    expect(service.requestCount('getModel')).toBe(1);
    expect(service.requestCount('getDataset')).toBe(1);
    expect(service.requestCount('createDataset')).toBe(2);
    expect(service.requestCount('suggest')).toBe(1);
    expect(client.slept).toEqual([]);
  });
});

describe('starting a training spends a credit: ambiguous failures are not retried', () => {
  async function setUp(partial = {}, clientOptions: { random?: () => number } = {}) {
    const service = await fixtures.service({ heldOutCount: 0, credits: 5, ...partial });
    const client = fixtures.client(service, { timeoutMs: 300, ...clientOptions });
    const dataset = await trainableDataset(client);
    return { service, client, dataset };
  }

  async function modelsOf(client: Awaited<ReturnType<typeof setUp>>['client'], datasetId: string) {
    const models = [];
    for await (const model of client.modelsOfDataset(datasetId)) models.push(model);
    return models;
  }

  it('a drop after processing: thrown retryable, credit spent once, found by reconciling', async () => {
    const { service, client, dataset } = await setUp();
    service.configure({ faults: [{ endpoint: 'startTraining', kind: 'drop_after', count: 1 }] });
    const error = await rejectionOf(client.startTraining(dataset.id, 'enc-small'));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ retryable: true, requestSent: true });
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(4);
    // The caller's reconciliation: the lost call did start a training.
    const models = await modelsOf(client, dataset.id);
    expect(models.map((model) => model.version)).toEqual([1]);
  });

  it.each([
    ['drop', ConnectionError],
    ['500', ServerError],
    ['503', UnavailableError],
  ] as const)('%s: thrown retryable after one request', async (kind, errorClass) => {
    const { service, client, dataset } = await setUp();
    service.configure({ faults: [{ endpoint: 'startTraining', kind, count: 1 }] });
    const error = (await rejectionOf(client.startTraining(dataset.id, 'enc-small'))) as ServiceError;
    expect(error).toBeInstanceOf(errorClass);
    expect(error.retryable).toBe(true);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(client.slept).toEqual([]);
    // These faults happen before any side effect: nothing to find, the caller may try again.
    expect(await modelsOf(client, dataset.id)).toEqual([]);
    expect(service.credits()).toBe(5);
  });

  it('a timeout: thrown retryable after one request', async () => {
    const { service, client, dataset } = await setUp();
    service.configure({ faults: [{ endpoint: 'startTraining', kind: 'stall', count: 1, stallMs: 1500 }] });
    const error = await rejectionOf(client.startTraining(dataset.id, 'enc-small'));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ retryable: true });
    expect(service.requestCount('startTraining')).toBe(1);
  });

  it('429 proves the request was not processed: retried, one credit spent', async () => {
    const { service, client, dataset } = await setUp({}, { random: () => 0 }); // no jitter on top of Retry-After
    service.configure({
      faults: [{ endpoint: 'startTraining', kind: '429', count: 2, retryAfterSeconds: 1 }],
    });
    const model = await client.startTraining(dataset.id, 'enc-small');
    expect(model.version).toBe(1);
    expect(service.requestCount('startTraining')).toBe(3);
    expect(client.slept).toEqual([1000, 1000]);
    expect(service.credits()).toBe(4);
  });

  it('a refused connection proves nothing was sent: retried until retries run out', async () => {
    const client = fixtures.client(await fixtures.service(), { baseUrl: await refusingUrl(), maxRetries: 3 });
    const error = await rejectionOf(client.startTraining('d1', 'enc-small'));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ requestSent: false });
    expect(client.slept).toHaveLength(3);
  });

  it('rate limited beyond the retries: RateLimitedError, no credit spent', async () => {
    const { service, client, dataset } = await setUp();
    service.configure({ faults: [{ endpoint: 'startTraining', kind: '429', retryAfterSeconds: 0 }] });
    expect(await rejectionOf(client.startTraining(dataset.id, 'enc-small'))).toBeInstanceOf(RateLimitedError);
    expect(service.requestCount('startTraining')).toBe(6);
    expect(service.credits()).toBe(5);
  });
});

describe('idempotent actions survive a lost answer', () => {
  it('structure: a retry answered 409 after a drop_after succeeds with the dataset record', async () => {
    const service = await fixtures.service({ heldOutCount: 2 });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    const reads = service.requestCount('getDataset');
    service.configure({ faults: [{ endpoint: 'structure', kind: 'drop_after', count: 1 }] });
    const structured = await client.structure(dataset.id);
    expect(structured).toMatchObject({
      id: dataset.id,
      status: 'labeling',
      step: 3,
      next_action: 'label_examples',
    });
    expect(service.requestCount('structure')).toBe(2);
    expect(service.requestCount('getDataset')).toBe(reads + 1);
  });

  it('structure: a 409 after a failure that proves nothing (429) stays a conflict', async () => {
    const service = await fixtures.service({ heldOutCount: 2 });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    await client.structure(dataset.id);
    service.configure({ faults: [{ endpoint: 'structure', kind: '429', count: 1, retryAfterSeconds: 0 }] });
    expect(await rejectionOf(client.structure(dataset.id))).toBeInstanceOf(ConflictError);
    expect(service.requestCount('structure')).toBe(3);
  });

  it('structure: a 409 after an ambiguous failure, on a dataset that never moved, stays a conflict', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    const dataset = await client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] });
    service.configure({ faults: [{ endpoint: 'structure', kind: '500', count: 1 }] });
    expect(await rejectionOf(client.structure(dataset.id))).toBeInstanceOf(ConflictError);
    expect(service.requestCount('structure')).toBe(2);
  });

  it('complete, suggest and labels: retried after drop_after and answered as before', async () => {
    const service = await fixtures.service({ heldOutCount: 2 });
    const client = fixtures.client(service);
    service.configure({
      faults: [
        { endpoint: 'completeFile', kind: 'drop_after', count: 1 },
        { endpoint: 'suggest', kind: 'drop_after', count: 1 },
        { endpoint: 'submitLabel', kind: 'drop_after', count: 1 },
        { endpoint: 'nextLabelTask', kind: '500', count: 1 },
      ],
    });
    const dataset = await uploadedDataset(client);
    expect(dataset.files[0]!.status).toBe('uploaded');
    expect(service.requestCount('completeFile')).toBe(2);

    const { questions } = await client.suggest(dataset.id);
    expect(questions.length).toBeGreaterThan(0);
    expect(service.requestCount('suggest')).toBe(2);

    await client.structure(dataset.id);
    const task = (await client.nextLabelTask(dataset.id))!;
    expect(service.requestCount('nextLabelTask')).toBe(2);
    expect(await client.submitLabel(dataset.id, task.task, 'positive')).toEqual({ remaining: 1 });
    expect(service.requestCount('submitLabel')).toBe(2);
  });

  it('createDataset is not re-sent after drop_after: one dataset, which the caller finds by its name', async () => {
    const service = await fixtures.service();
    const client = fixtures.client(service);
    service.configure({ faults: [{ endpoint: 'createDataset', kind: 'drop_after', count: 1 }] });
    await expect(client.createDataset({ name: 'd', files: [{ name: 'a.csv', bytes: 3 }] })).rejects.toThrow();
    expect(service.requestCount('createDataset')).toBe(1);
    const all = await allOf(client.listDatasets());
    expect(all).toHaveLength(1);
    expect(all[0]?.name).toBe('d');
  });
});
