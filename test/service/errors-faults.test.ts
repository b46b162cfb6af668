/** Routing, authentication on every /v1 endpoint, and failure injection (docs/service-contract.md, B9; docs/simulated-service.md). */
import { describe, expect, it } from 'vitest';
import {
  api,
  createDataset,
  createModel,
  datasetAt,
  doneModel,
  expectError,
  expectStatus,
  fileByName,
  putFile,
  completeFile,
  useHarnesses,
} from '../helpers/service-http.js';
import type { EndpointName } from '../../local/service/index.js';
import type { DatasetRecord, Harness, LabelTask, ModelRecord, Page } from '../helpers/service-http.js';

const start = useHarnesses();

interface Route {
  endpoint: EndpointName;
  method: string;
  path: string;
  body?: unknown;
}

/** Every /v1 endpoint, aimed at real records so only the missing/wrong key can be the problem. */
async function everyRoute(h: Harness): Promise<Route[]> {
  const uploading = await createDataset(h);
  const labeling = await datasetAt(h, 'labeling');
  const task = expectStatus(await api<LabelTask>(h, 'GET', `/v1/datasets/${labeling.id}/labels/next`), 200);
  const ready = await datasetAt(h, 'ready');
  const model = await doneModel(h, { dataset: ready });
  const file = uploading.files[0]!;
  return [
    { endpoint: 'listModels', method: 'GET', path: '/v1/models' },
    { endpoint: 'listDatasets', method: 'GET', path: '/v1/datasets' },
    {
      endpoint: 'createDataset',
      method: 'POST',
      path: '/v1/datasets',
      body: { name: 'x', files: [{ name: 'a.csv', bytes: 1 }] },
    },
    { endpoint: 'getDataset', method: 'GET', path: `/v1/datasets/${uploading.id}` },
    { endpoint: 'getModel', method: 'GET', path: `/v1/models/${model.id}` },
    {
      endpoint: 'completeFile',
      method: 'POST',
      path: `/v1/datasets/${uploading.id}/files/${file.id}/complete`,
    },
    { endpoint: 'suggest', method: 'POST', path: `/v1/datasets/${labeling.id}/suggest` },
    { endpoint: 'structure', method: 'POST', path: `/v1/datasets/${labeling.id}/structure`, body: {} },
    { endpoint: 'nextLabelTask', method: 'GET', path: `/v1/datasets/${labeling.id}/labels/next` },
    {
      endpoint: 'submitLabel',
      method: 'POST',
      path: `/v1/datasets/${labeling.id}/labels/${task.task}`,
      body: { label: task.choices[0] },
    },
    { endpoint: 'listEncoders', method: 'GET', path: '/v1/encoders' },
    {
      endpoint: 'startTraining',
      method: 'POST',
      path: `/v1/datasets/${ready.id}/models`,
      body: { encoder: 'enc-small' },
    },
    { endpoint: 'getDownloadLink', method: 'GET', path: `/v1/models/${model.id}/download` },
  ];
}

describe('authentication', () => {
  it('refuses a missing, wrong or malformed key on every /v1 endpoint with 401, without side effects', async () => {
    const h = await start({ heldOutCount: 1 });
    const routes = await everyRoute(h);
    expect(routes.map((r) => r.endpoint).sort()).toEqual(
      [
        'listModels',
        'listDatasets',
        'createDataset',
        'getDataset',
        'getModel',
        'completeFile',
        'suggest',
        'structure',
        'nextLabelTask',
        'submitLabel',
        'listEncoders',
        'startTraining',
        'getDownloadLink',
      ].sort(),
    );
    const credits = h.service.credits();
    const datasetCount = (await api<Page<DatasetRecord>>(h, 'GET', '/v1/datasets')).body.data.length;
    const badAuth: (false | string)[] = [
      false,
      'Bearer wrong-key',
      `Basic ${h.service.apiKey}`,
      h.service.apiKey,
      'Bearer',
      `Bearer ${h.service.apiKey}x`,
    ];
    for (const route of routes) {
      for (const auth of badAuth) {
        const res = await api(h, route.method, route.path, { auth, body: route.body });
        expect({ route: route.endpoint, auth, status: res.status }).toEqual({
          route: route.endpoint,
          auth,
          status: 401,
        });
        expectError(res, 401, 'unauthorized');
      }
    }
    expect(h.service.credits()).toBe(credits);
    expect((await api<Page<DatasetRecord>>(h, 'GET', '/v1/datasets')).body.data).toHaveLength(datasetCount);
    // And each route works with the right key (so the 401s above were about the key alone).
    for (const route of routes) {
      const res = await api(h, route.method, route.path, { body: route.body });
      expect({ route: route.endpoint, ok: res.status < 400 || res.status === 409 }).toEqual({
        route: route.endpoint,
        ok: true,
      });
    }
  });
});

describe('routing', () => {
  it.each([
    ['GET', '/v1/nothing-here'],
    ['DELETE', '/v1/datasets'],
    ['POST', '/v1/encoders'],
    ['PUT', '/v1/models'],
    ['GET', '/datasets'],
    ['GET', '/v2/datasets'],
    ['GET', '/v1/datasets/x/y/z'],
  ])('answers %s %s with 404 not_found, before auth', async (method, path) => {
    const h = await start();
    expectError(await api(h, method, path, { auth: false }), 404, 'not_found');
    expectError(await api(h, method, path), 404, 'not_found');
  });
});

describe('failure injection', () => {
  it('429: count fires for the first N requests with Retry-After, then the endpoint answers', async () => {
    const h = await start({
      faults: [{ endpoint: 'listEncoders', kind: '429', count: 2, retryAfterSeconds: 3 }],
    });
    for (let i = 0; i < 2; i++) {
      const res = await api(h, 'GET', '/v1/encoders');
      expectError(res, 429, 'rate_limited');
      expect(res.headers.get('retry-after')).toBe('3');
    }
    expectStatus(await api(h, 'GET', '/v1/encoders'), 200);
    expect(h.service.requestCount('listEncoders')).toBe(3);
    // Other endpoints were not affected.
    expectStatus(await api(h, 'GET', '/v1/datasets'), 200);
  });

  it('429 defaults to Retry-After: 1', async () => {
    const h = await start({ faults: [{ endpoint: 'listDatasets', kind: '429', count: 1 }] });
    const res = await api(h, 'GET', '/v1/datasets');
    expectError(res, 429, 'rate_limited');
    expect(res.headers.get('retry-after')).toBe('1');
  });

  it('faults fire before auth and are counted', async () => {
    const h = await start({ faults: [{ endpoint: 'listModels', kind: '503', count: 1 }] });
    expectError(await api(h, 'GET', '/v1/models', { auth: false }), 503, 'unavailable');
    expectError(await api(h, 'GET', '/v1/models', { auth: false }), 401, 'unauthorized');
    expect(h.service.requestCount('listModels')).toBe(2);
  });

  it('500 server_error happens before any side effect', async () => {
    const h = await start({ credits: 5 });
    const ds = await datasetAt(h, 'ready');
    h.service.configure({ faults: [{ endpoint: 'startTraining', kind: '500', count: 1 }] });
    expectError(await createModel(h, ds.id), 500, 'server_error');
    expect(h.service.credits()).toBe(5);
    expect((await api<Page<ModelRecord>>(h, 'GET', '/v1/models')).body.data).toHaveLength(0);
    expect(expectStatus(await createModel(h, ds.id), 201).version).toBe(1);
    expect(h.service.requestCount('startTraining')).toBe(2);
  });

  it('503 unavailable on createDataset creates nothing', async () => {
    const h = await start({ faults: [{ endpoint: 'createDataset', kind: '503', count: 1 }] });
    const res = await api(h, 'POST', '/v1/datasets', {
      body: { name: 'x', files: [{ name: 'a.csv', bytes: 1 }] },
    });
    expectError(res, 503, 'unavailable');
    expect((await api<Page<DatasetRecord>>(h, 'GET', '/v1/datasets')).body.data).toHaveLength(0);
  });

  it("'*' matches every endpoint", async () => {
    const h = await start({ faults: [{ endpoint: '*', kind: '500', count: 3 }] });
    expectError(await api(h, 'GET', '/v1/encoders'), 500, 'server_error');
    expectError(await api(h, 'GET', '/v1/datasets'), 500, 'server_error');
    expectError(await api(h, 'GET', '/v1/models'), 500, 'server_error');
    expectStatus(await api(h, 'GET', '/v1/encoders'), 200);
  });

  it('the first rule that fires wins', async () => {
    const h = await start({
      faults: [
        { endpoint: 'listEncoders', kind: '429', count: 1 },
        { endpoint: '*', kind: '503', count: 1 },
      ],
    });
    expectError(await api(h, 'GET', '/v1/encoders'), 429, 'rate_limited');
  });

  it('configure() replaces the rules while running', async () => {
    const h = await start({ faults: [{ endpoint: 'listEncoders', kind: '500' }] });
    expectError(await api(h, 'GET', '/v1/encoders'), 500, 'server_error');
    expectError(await api(h, 'GET', '/v1/encoders'), 500, 'server_error');
    h.service.configure({ faults: [] });
    expectStatus(await api(h, 'GET', '/v1/encoders'), 200);
  });

  it('drop: the connection fails and nothing happened (credits unchanged, no model)', async () => {
    const h = await start({ credits: 5 });
    const ds = await datasetAt(h, 'ready');
    h.service.configure({ faults: [{ endpoint: 'startTraining', kind: 'drop', count: 1 }] });
    await expect(createModel(h, ds.id)).rejects.toThrow();
    expect(h.service.credits()).toBe(5);
    expect((await api<Page<ModelRecord>>(h, 'GET', '/v1/models')).body.data).toHaveLength(0);
    expect(h.service.requestCount('startTraining')).toBe(1);
    expect(expectStatus(await createModel(h, ds.id), 201).version).toBe(1);
  });

  it('drop_after: the connection fails but the training started (credit spent, model listed)', async () => {
    const h = await start({ credits: 5 });
    const ds = await datasetAt(h, 'ready');
    h.service.configure({ faults: [{ endpoint: 'startTraining', kind: 'drop_after', count: 1 }] });
    await expect(createModel(h, ds.id)).rejects.toThrow();
    expect(h.service.credits()).toBe(4);
    const models = (await api<Page<ModelRecord>>(h, 'GET', '/v1/models')).body.data;
    expect(models).toHaveLength(1);
    expect(models[0]).toMatchObject({ dataset_id: ds.id, version: 1, status: 'queued' });
    expect(expectStatus(await createModel(h, ds.id), 201).version).toBe(2);
  });

  it('drop_after on createDataset: the dataset exists although the client saw a failure', async () => {
    const h = await start({ faults: [{ endpoint: 'createDataset', kind: 'drop_after', count: 1 }] });
    await expect(createDataset(h)).rejects.toThrow();
    expect((await api<Page<DatasetRecord>>(h, 'GET', '/v1/datasets')).body.data).toHaveLength(1);
  });

  it('a faulted upload stores nothing: complete answers not_uploaded', async () => {
    const h = await start();
    const content = 'text\nhello\n';
    const ds = await createDataset(h, [{ name: 'a.csv', content }]);
    const file = fileByName(ds, 'a.csv');
    h.service.configure({ faults: [{ endpoint: 'fileUpload', kind: '503', count: 1 }] });
    expectError(await putFile(file.upload_url!, content), 503, 'unavailable');
    expectError(await completeFile(h, ds.id, file.id), 409, 'not_uploaded');
    expectStatus(await putFile(file.upload_url!, content), 200);
    expectStatus(await completeFile(h, ds.id, file.id), 200);
    expect(h.service.requestCount('fileUpload')).toBe(2);
  });

  it('stall delays the answer by stallMs (a client timeout fires first)', async () => {
    const h = await start({ faults: [{ endpoint: 'listEncoders', kind: 'stall', count: 2, stallMs: 400 }] });
    const started = performance.now();
    expectStatus(await api(h, 'GET', '/v1/encoders'), 200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(380);
    const timedOut = fetch(`${h.service.apiUrl}/v1/encoders`, {
      headers: { authorization: `Bearer ${h.service.apiKey}` },
      signal: AbortSignal.timeout(100),
    });
    await expect(timedOut).rejects.toThrow();
    const quick = performance.now();
    expectStatus(await api(h, 'GET', '/v1/encoders'), 200);
    expect(performance.now() - quick).toBeLessThan(380);
  });

  it('rate is reproducible: the same seed gives the same sequence of outcomes', async () => {
    const faults = [{ endpoint: 'listEncoders' as const, kind: '500' as const, rate: 0.5 }];
    const outcomes = async (seed: number): Promise<number[]> => {
      const h = await start({ seed, faults });
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await api(h, 'GET', '/v1/encoders')).status);
      return statuses;
    };
    const first = await outcomes(7);
    const second = await outcomes(7);
    expect(second).toEqual(first);
    expect(first).toContain(500);
    expect(first).toContain(200);
    expect(new Set(first)).toEqual(new Set([200, 500]));
  });

  it('count goes first, then rate decides', async () => {
    const h = await start({ faults: [{ endpoint: 'listEncoders', kind: '500', count: 2, rate: 0 }] });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await api(h, 'GET', '/v1/encoders')).status);
    expect(statuses).toEqual([500, 500, 200, 200, 200]);
  });

  it('rate 0 never fires and rate 1 always fires', async () => {
    const h = await start({ faults: [{ endpoint: 'listEncoders', kind: '503', rate: 0 }] });
    for (let i = 0; i < 10; i++) expectStatus(await api(h, 'GET', '/v1/encoders'), 200);
    h.service.configure({ faults: [{ endpoint: 'listEncoders', kind: '503', rate: 1 }] });
    for (let i = 0; i < 10; i++) expectError(await api(h, 'GET', '/v1/encoders'), 503, 'unavailable');
  });
});

describe('no_task misbehaviour', () => {
  it('labels/next answers 204 while the dataset still has open tasks and shows label_examples', async () => {
    const h = await start({});
    const dataset = await datasetAt(h, 'labeling');
    h.service.configure({ faults: [{ endpoint: 'nextLabelTask', kind: 'no_task', count: 1 }] });
    const first = await api<LabelTask>(h, 'GET', `/v1/datasets/${dataset.id}/labels/next`);
    expect(first.status).toBe(204);
    const record = expectStatus(await api<DatasetRecord>(h, 'GET', `/v1/datasets/${dataset.id}`), 200);
    expect(record.next_action).toBe('label_examples');
    // Once the rule is spent, the open task is offered as before.
    const next = expectStatus(await api<LabelTask>(h, 'GET', `/v1/datasets/${dataset.id}/labels/next`), 200);
    expect(next.remaining).toBeGreaterThan(0);
    expect(h.service.faultCount('no_task')).toBe(1);
  });
});
