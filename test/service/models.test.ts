/** Encoders, starting trainings, credits, model phases, download links and files going away (docs/service-contract.md, B7 and B8). */
import { describe, expect, it } from 'vitest';
import {
  HOUR,
  MINUTE,
  UUID_RE,
  api,
  createDataset,
  createModel,
  datasetAt,
  doneModel,
  expectError,
  expectStatus,
  getDataset,
  getModel,
  iso,
  readResponse,
  useHarnesses,
} from '../helpers/service-http.js';
import type { Encoder } from '../../local/service/index.js';
import type { Harness, ModelRecord, Page } from '../helpers/service-http.js';

const start = useHarnesses();

const MODEL_FIELDS = [
  'id',
  'dataset_id',
  'name',
  'status',
  'version',
  'encoder',
  'created_at',
  'updated_at',
  'public_at',
  'files_expire_at',
  'files_deleted_at',
  'error',
  'gpu_usd',
  'jev_usd',
  'jev',
  'metrics',
  'options',
  'steps',
  'holdout_n',
  'onnx_bytes',
  'hf_repo',
  'verdict',
];

async function downloadLink(h: Harness, modelId: string) {
  return api<{ url: string; expires_at: string }>(h, 'GET', `/v1/models/${modelId}/download`);
}

describe('GET /v1/encoders', () => {
  it('lists the configured encoders with exactly one default and next null', async () => {
    const encoders: Encoder[] = [
      { id: 'e1', name: 'One', default: false },
      { id: 'e2', name: 'Two', default: true },
      { id: 'e3', name: 'Three', default: false },
    ];
    const h = await start({ encoders });
    const page = expectStatus(await api<Page<Encoder>>(h, 'GET', '/v1/encoders'), 200);
    expect(page).toEqual({ data: encoders, next: null });
    expect(page.data.filter((e) => e.default)).toHaveLength(1);
  });

  it('serves the default encoders with exactly one default', async () => {
    const h = await start();
    const page = expectStatus(await api<Page<Encoder>>(h, 'GET', '/v1/encoders'), 200);
    expect(page.next).toBeNull();
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data.filter((e) => e.default)).toHaveLength(1);
  });
});

describe('POST /v1/datasets/{id}/models', () => {
  it('answers 201 queued/wait (step 4) with every model field, spends 1 credit, keeps the dataset ready', async () => {
    const h = await start({ credits: 3 });
    const ds = await datasetAt(h, 'ready', { name: 'support tickets' });
    expect(ds).toMatchObject({ status: 'ready', step: 3, next_action: 'start_training' });
    h.service.clock.advance(1234);
    const createdAt = iso(h.service.clock.now());
    const res = await createModel(h, ds.id, 'enc-base');
    const model = expectStatus(res, 201);
    for (const field of MODEL_FIELDS) expect(model).toHaveProperty(field);
    expect(model).toMatchObject({
      kind: 'model',
      dataset_id: ds.id,
      name: 'support tickets v1',
      status: 'queued',
      step: 4,
      next_action: 'wait',
      version: 1,
      encoder: 'enc-base',
      created_at: createdAt,
      updated_at: createdAt,
      files_expire_at: null,
      files_deleted_at: null,
      onnx_bytes: null,
      hf_repo: null,
      error: null,
    });
    expect(model.id).toMatch(UUID_RE);
    expect(h.service.credits()).toBe(2);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'ready', next_action: 'start_training' });

    const second = expectStatus(await createModel(h, ds.id), 201);
    expect(second).toMatchObject({ version: 2, name: 'support tickets v2', dataset_id: ds.id });
    expect(second.id).not.toBe(model.id);
    expect(h.service.credits()).toBe(1);
    expect(await getModel(h, model.id)).toMatchObject({ id: model.id, version: 1 });
  });

  it('trains a ready dataset again after one of its models is done: the contract assumption a sweep relies on (TRAINABLE_NEXT_ACTIONS)', async () => {
    const h = await start({ credits: 2 });
    const ds = await datasetAt(h, 'ready');
    const first = await doneModel(h, { dataset: ds });
    expect(first).toMatchObject({ status: 'done', next_action: 'download' });
    // The dataset stays where a new training starts from, and `usable` lists it as such.
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'ready', next_action: 'start_training' });
    const usable = expectStatus(await api<Page<{ id: string }>>(h, 'GET', '/v1/datasets?usable=true'), 200);
    expect(usable.data.map((dataset) => dataset.id)).toContain(ds.id);
    const second = expectStatus(await createModel(h, ds.id, 'enc-base'), 201);
    expect(second).toMatchObject({ dataset_id: ds.id, encoder: 'enc-base', version: 2, status: 'queued' });
    expect(h.service.credits()).toBe(0);
  });

  it('reports the metrics the trainingMetrics knob gives, one entry a training, then generated ones', async () => {
    const h = await start({ trainingMetrics: [{ f1: 0.5 }] });
    const ds = await datasetAt(h, 'ready');
    expect((await doneModel(h, { dataset: ds })).metrics).toEqual({ f1: 0.5 });
    expect(Object.keys((await doneModel(h, { dataset: ds })).metrics ?? {}).sort()).toEqual([
      'accuracy',
      'f1',
    ]);
  });

  it('numbers versions per dataset', async () => {
    const h = await start();
    const a = await datasetAt(h, 'ready');
    const b = await datasetAt(h, 'ready');
    expect(expectStatus(await createModel(h, a.id), 201).version).toBe(1);
    expect(expectStatus(await createModel(h, b.id), 201).version).toBe(1);
    expect(expectStatus(await createModel(h, a.id), 201).version).toBe(2);
  });

  it('goes queued -> training -> done (step 5, download) with the results filled in', async () => {
    const h = await start({ queuedMs: 500, trainingMs: 2000, modelBytes: 4096, modelFilesTtlMs: 6 * HOUR });
    const model = await doneModel(h, { wait: false });
    const createdAt = h.service.clock.now();
    expect(model.created_at).toBe(iso(createdAt));
    h.service.clock.advance(499);
    expect(await getModel(h, model.id)).toMatchObject({ status: 'queued', step: 4, next_action: 'wait' });
    h.service.clock.advance(1);
    expect(await getModel(h, model.id)).toMatchObject({ status: 'training', step: 4, next_action: 'wait' });
    h.service.clock.advance(1999);
    expect(await getModel(h, model.id)).toMatchObject({ status: 'training', step: 4, next_action: 'wait' });
    h.service.clock.advance(1);
    const done = await getModel(h, model.id);
    const doneAt = createdAt + 2500;
    expect(done).toMatchObject({
      kind: 'model',
      status: 'done',
      step: 5,
      next_action: 'download',
      onnx_bytes: 4096,
      files_expire_at: iso(doneAt + 6 * HOUR),
      files_deleted_at: null,
      hf_repo: null,
      error: null,
    });
    expect(Object.keys(done.metrics ?? {}).sort()).toEqual(['accuracy', 'f1']);
    expect(typeof done.metrics?.accuracy).toBe('number');
    expect(typeof done.metrics?.f1).toBe('number');
    expect(done.holdout_n).toEqual(expect.any(Number));
    expect(done.gpu_usd).toEqual(expect.any(Number));
    expect(done.jev_usd).toEqual(expect.any(Number));
    expect(done.public_at).toEqual(expect.any(String));
    expect(done.verdict).toEqual(expect.any(String));
  });

  it('returns the credit of a failed training at failure time, shows retry and accepts a new training', async () => {
    const h = await start({ credits: 2, failTrainings: 1, queuedMs: 100, trainingMs: 100 });
    const ds = await datasetAt(h, 'ready');
    const failing = expectStatus(await createModel(h, ds.id), 201);
    expect(h.service.credits()).toBe(1);
    h.service.clock.advance(199);
    expect(await getModel(h, failing.id)).toMatchObject({ step: 4, next_action: 'wait' });
    expect(h.service.credits()).toBe(1);
    h.service.clock.advance(1);
    const failed = await getModel(h, failing.id);
    expect(failed).toMatchObject({ status: 'failed', step: 4, next_action: 'retry' });
    expect(failed.error).toEqual(expect.any(String));
    expect(h.service.credits()).toBe(2);

    const retried = expectStatus(await createModel(h, ds.id), 201);
    expect(retried.version).toBe(2);
    expect(h.service.credits()).toBe(1);
    h.service.clock.advance(200);
    expect(await getModel(h, retried.id)).toMatchObject({ status: 'done', step: 5, next_action: 'download' });
    expect(h.service.credits()).toBe(1);
  });

  it('refuses without credits with 402 and exactly {"error":"no_credits","message":...}', async () => {
    const h = await start({ credits: 1 });
    const ds = await datasetAt(h, 'ready');
    expectStatus(await createModel(h, ds.id), 201);
    const res = await createModel(h, ds.id);
    expectError(res, 402, 'no_credits');
    expect(h.service.credits()).toBe(0);
    expect(expectStatus(await api<Page<ModelRecord>>(h, 'GET', '/v1/models'), 200).data).toHaveLength(1);
  });

  it('spends the last credit once when two trainings start at the same moment', async () => {
    const h = await start({ credits: 1 });
    const ds = await datasetAt(h, 'ready');
    const answers = await Promise.all([createModel(h, ds.id), createModel(h, ds.id)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 402]);
    expect(h.service.credits()).toBe(0);
  });

  it('checks in order: unknown dataset 404, body 400, encoder 400, not ready 409, credits 402', async () => {
    const h = await start({ credits: 0 });
    const unknown = '00000000-0000-4000-8000-000000000000';
    const path = (id: string) => `/v1/datasets/${id}/models`;
    expectError(await api(h, 'POST', path(unknown), { body: { bad: 1 } }), 404, 'not_found');

    const uploading = await createDataset(h);
    expectError(await api(h, 'POST', path(uploading.id), { body: {} }), 400, 'invalid_request');
    expectError(await api(h, 'POST', path(uploading.id)), 400, 'invalid_request');
    expectError(await api(h, 'POST', path(uploading.id), { rawBody: '{"encoder":' }), 400, 'invalid_request');
    expectError(
      await api(h, 'POST', path(uploading.id), { body: { encoder: 'enc-small', x: 1 } }),
      400,
      'invalid_request',
    );
    expectError(await api(h, 'POST', path(uploading.id), { body: { encoder: 5 } }), 400, 'invalid_request');
    expectError(
      await api(h, 'POST', path(uploading.id), { body: { encoder: 'nope' } }),
      400,
      'unknown_encoder',
    );
    expectError(
      await api(h, 'POST', path(uploading.id), { body: { encoder: 'enc-small' } }),
      409,
      'not_ready',
    );

    const ready = await datasetAt(h, 'ready');
    expectError(await createModel(h, ready.id, 'nope'), 400, 'unknown_encoder');
    expectError(await createModel(h, ready.id), 402, 'no_credits');
  });

  it('answers 409 not_ready at labeling and once the dataset has expired', async () => {
    const h = await start({ datasetTtlMs: HOUR });
    const labeling = await datasetAt(h, 'labeling');
    expectError(await createModel(h, labeling.id), 409, 'not_ready');
    const ready = await datasetAt(h, 'ready');
    h.service.clock.advance(HOUR);
    expect(await getDataset(h, ready.id)).toMatchObject({
      status: 'expired',
      next_action: 'expired',
      step: 3,
    });
    expectError(await createModel(h, ready.id), 409, 'not_ready');
    expect(h.service.credits()).toBe(10);
  });

  it('GET /v1/models/{id} of an unknown id answers 404 not_found', async () => {
    const h = await start();
    expectError(await api(h, 'GET', '/v1/models/00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  });
});

describe('GET /v1/models/{id}/download', () => {
  it('answers 409 not_ready before the model is done', async () => {
    const h = await start();
    const model = await doneModel(h, { wait: false });
    expectError(await downloadLink(h, model.id), 409, 'not_ready');
    h.service.clock.advance(h.options.queuedMs);
    expectError(await downloadLink(h, model.id), 409, 'not_ready');
  });

  it('answers 409 not_ready for a failed model and 404 for an unknown one', async () => {
    const h = await start({ failTrainings: 1 });
    const failed = await doneModel(h);
    expect(failed.status).toBe('failed');
    expectError(await downloadLink(h, failed.id), 409, 'not_ready');
    expectError(await downloadLink(h, '00000000-0000-4000-8000-000000000000'), 404, 'not_found');
  });

  it('issues a link valid 15 minutes, never past files_expire_at', async () => {
    const h = await start({ modelFilesTtlMs: HOUR });
    const model = await doneModel(h);
    const filesExpireAt = Date.parse(model.files_expire_at!);
    const link = expectStatus(await downloadLink(h, model.id), 200);
    expect(Object.keys(link).sort()).toEqual(['expires_at', 'url']);
    expect(link.url.startsWith(h.service.fileUrl)).toBe(true);
    expect(link.expires_at).toBe(iso(h.service.clock.now() + 15 * MINUTE));

    h.service.clock.advance(filesExpireAt - h.service.clock.now() - 5 * MINUTE);
    const late = expectStatus(await downloadLink(h, model.id), 200);
    expect(late.expires_at).toBe(model.files_expire_at);
  });

  it('once files_expire_at passes: next_action none, files_deleted_at set, 410 files_expired', async () => {
    const h = await start({ modelFilesTtlMs: HOUR });
    const model = await doneModel(h);
    const link = expectStatus(await downloadLink(h, model.id), 200);
    h.service.clock.advance(Date.parse(model.files_expire_at!) - h.service.clock.now() - 1);
    expect((await getModel(h, model.id)).next_action).toBe('download');
    h.service.clock.advance(1);
    const gone = await getModel(h, model.id);
    expect(gone).toMatchObject({ step: 5, next_action: 'none' });
    expect(gone.files_deleted_at).toEqual(expect.any(String));
    expectError(await downloadLink(h, model.id), 410, 'files_expired');
    // No link outlives files_expire_at, so an earlier link is both expired and pointing at gone
    // files: the contract ranks neither refusal first; a 200 would be wrong.
    const res = await readResponse(await fetch(link.url));
    expect([403, 410]).toContain(res.status);
  });

  it('removeModelFiles(moved): next_action none, hf_repo set, credits kept, 410 on link and download', async () => {
    const h = await start({ credits: 5 });
    const model = await doneModel(h);
    const link = expectStatus(await downloadLink(h, model.id), 200);
    h.service.removeModelFiles(model.id, 'moved');
    const moved = await getModel(h, model.id);
    expect(moved).toMatchObject({ step: 5, next_action: 'none' });
    expect(moved.hf_repo).toEqual(expect.any(String));
    expect(moved.files_deleted_at).toEqual(expect.any(String));
    expect(h.service.credits()).toBe(4);
    expectError(await downloadLink(h, model.id), 410, 'files_expired');
    expectError(await readResponse(await fetch(link.url)), 410, 'files_expired');
  });

  it('removeModelFiles(refunded): status refunded, credit returned, next_action none, 410', async () => {
    const h = await start({ credits: 5 });
    const model = await doneModel(h);
    expect(h.service.credits()).toBe(4);
    const link = expectStatus(await downloadLink(h, model.id), 200);
    h.service.removeModelFiles(model.id, 'refunded');
    const refunded = await getModel(h, model.id);
    expect(refunded).toMatchObject({ status: 'refunded', step: 5, next_action: 'none' });
    expect(refunded.files_deleted_at).toEqual(expect.any(String));
    expect(h.service.credits()).toBe(5);
    expectError(await downloadLink(h, model.id), 410, 'files_expired');
    expectError(await readResponse(await fetch(link.url)), 410, 'files_expired');
  });
});

describe('deleteRecord: a dataset or model gone at the service', () => {
  it('a deleted dataset: 404 not_found on its record, its actions and its upload URLs; left out of lists; its models stay', async () => {
    const h = await start({ credits: 5 });
    const pending = await createDataset(h);
    const uploadUrl = pending.files[0]?.upload_url ?? '';
    const labelling = await datasetAt(h, 'labeling');
    const ready = await datasetAt(h, 'ready');
    const model = expectStatus(await createModel(h, ready.id), 201);
    for (const dataset of [pending, labelling, ready]) h.service.deleteRecord('dataset', dataset.id);

    expectError(await api(h, 'GET', `/v1/datasets/${pending.id}`), 404, 'not_found');
    expectError(await readResponse(await fetch(uploadUrl, { method: 'PUT', body: 'x' })), 404, 'not_found');
    expectError(await api(h, 'GET', `/v1/datasets/${labelling.id}/labels/next`), 404, 'not_found');
    expectError(await createModel(h, ready.id), 404, 'not_found');
    const listed = expectStatus(await api<Page<{ id: string }>>(h, 'GET', '/v1/datasets'), 200);
    expect(listed.data).toEqual([]);
    expect((await getModel(h, model.id)).dataset_id).toBe(ready.id);
    expect(h.service.credits()).toBe(4);
    expect(() => {
      h.service.deleteRecord('dataset', ready.id);
    }).toThrow(`no dataset ${ready.id}`);
  });

  it('a deleted model: 404 on its record, its link and its download URL; left out of lists; its credit stays spent', async () => {
    const h = await start({ credits: 5 });
    const model = await doneModel(h);
    const link = expectStatus(await downloadLink(h, model.id), 200);
    h.service.deleteRecord('model', model.id);

    expectError(await api(h, 'GET', `/v1/models/${model.id}`), 404, 'not_found');
    expectError(await downloadLink(h, model.id), 404, 'not_found');
    expectError(await readResponse(await fetch(link.url)), 404, 'not_found');
    const listed = expectStatus(await api<Page<ModelRecord>>(h, 'GET', '/v1/models'), 200);
    expect(listed.data).toEqual([]);
    expect(h.service.credits()).toBe(4);
  });

  it('a deleted model whose training had failed keeps its credit returned', async () => {
    const h = await start({ credits: 5, failTrainings: 1 });
    const model = await doneModel(h);
    expect(model.status).toBe('failed');
    expect(h.service.credits()).toBe(5);
    h.service.deleteRecord('model', model.id);
    expect(h.service.credits()).toBe(5);
  });
});
