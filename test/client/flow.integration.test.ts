/**
 * Every client method against the simulated service over real HTTP, along the happy path of
 * the flow: upload, structure with decisions, labels, training, download, lists.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { modelBytesAt } from '../../local/service/index.js';
import { allOf, CLOCK_START, MINUTE, uploadedDataset, useFixtures } from './helpers.js';
import { csv, SAMPLE_TEXTS } from '../helpers/fixtures.js';

const fixtures = useFixtures();

describe('the client drives the whole flow', () => {
  it('creates a dataset and uploads and completes its files', async () => {
    const service = await fixtures.service({ readingMs: 1000 });
    const client = fixtures.client(service);
    const content = csv(SAMPLE_TEXTS);

    const created = await client.createDataset({
      name: 'reviews',
      files: [{ name: 'reviews.csv', bytes: Buffer.byteLength(content), content_type: 'text/csv' }],
    });
    expect(created).toMatchObject({
      kind: 'dataset',
      status: 'uploading',
      step: 1,
      next_action: 'upload_files',
    });
    expect(created.files).toEqual([
      expect.objectContaining({ name: 'reviews.csv', status: 'pending', bytes: Buffer.byteLength(content) }),
    ]);
    expect(created.files[0]!.upload_url).toMatch(new RegExp(`^${service.fileUrl}/`));

    const fetched = await client.getDataset(created.id);
    expect(fetched.id).toBe(created.id);
    expect(fetched.files[0]!.upload_url).toEqual(expect.any(String));

    const afterUpload = await client.uploadFile(created.id, created.files[0]!, () =>
      Readable.from([Buffer.from(content)]),
    );
    expect(afterUpload).toMatchObject({ status: 'reading', step: 1, next_action: 'wait' });
    expect(afterUpload.files[0]).toMatchObject({ status: 'uploaded', upload_url: null });
    expect(service.fileDigest(created.id, 'reviews.csv')?.bytes).toBe(Buffer.byteLength(content));

    // complete is idempotent: completing again answers the same record.
    const again = await client.completeFile(created.id, created.files[0]!.id);
    expect(again.files[0]!.status).toBe('uploaded');

    service.clock.advance(1000);
    expect(await client.getDataset(created.id)).toMatchObject({
      status: 'read',
      step: 2,
      next_action: 'structure',
    });
  });

  it('suggests, structures with answers, labels held-out examples, trains and downloads', async () => {
    const service = await fixtures.service({
      heldOutCount: 3,
      queuedMs: 500,
      trainingMs: 2000,
      modelBytes: 300_000,
    });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);

    const { questions } = await client.suggest(dataset.id);
    expect(questions.length).toBeGreaterThanOrEqual(2);
    const picking = await client.getDataset(dataset.id);
    expect(picking).toMatchObject({ next_action: 'pick_decisions', step: 2 });
    expect(picking.questions).toEqual(questions);

    const first = questions[0]!;
    const other = first.choices.find((choice) => choice !== first.suggested)!;
    const structured = await client.structure(dataset.id, [{ id: first.id, answer: other }]);
    expect(structured.step).toBeGreaterThanOrEqual(2);
    expect(['structuring', 'labeling']).toContain(structured.status);

    const task = await client.nextLabelTask(dataset.id);
    expect(task).toMatchObject({ remaining: 3, choices: ['positive', 'negative', 'neutral'] });
    expect(await client.nextLabelTask(dataset.id)).toEqual(task);
    const texts = new Set<string>();
    let remaining = 3;
    for (let i = 0; i < 10; i++) {
      const next = await client.nextLabelTask(dataset.id);
      if (next === null) break;
      texts.add(next.example.text);
      const result = await client.submitLabel(dataset.id, next.task, 'negative');
      expect(result.remaining).toBe(remaining - 1);
      // Labelling again with the same label is idempotent.
      expect(await client.submitLabel(dataset.id, next.task, 'negative')).toEqual(result);
      remaining = result.remaining;
    }
    expect(remaining).toBe(0);
    expect(texts.size).toBe(3);
    for (const text of texts) expect(text).not.toMatch(/@|555-0100/);
    expect(await client.nextLabelTask(dataset.id)).toBeNull();
    expect(await client.getDataset(dataset.id)).toMatchObject({
      status: 'ready',
      step: 3,
      next_action: 'start_training',
    });

    const encoders = await client.listEncoders();
    expect(encoders.map((encoder) => encoder.id)).toEqual(['enc-small', 'enc-base']);
    expect(await client.defaultEncoder()).toEqual({ id: 'enc-small', name: 'Small encoder', default: true });

    const credits = service.credits();
    const model = await client.startTraining(dataset.id, 'enc-base');
    expect(model).toMatchObject({
      kind: 'model',
      dataset_id: dataset.id,
      encoder: 'enc-base',
      version: 1,
      status: 'queued',
      step: 4,
      next_action: 'wait',
      onnx_bytes: null,
    });
    expect(service.credits()).toBe(credits - 1);

    service.clock.advance(2500);
    const done = await client.getModel(model.id);
    expect(done).toMatchObject({ status: 'done', step: 5, next_action: 'download', onnx_bytes: 300_000 });
    expect(Object.keys(done.metrics ?? {}).sort()).toEqual(['accuracy', 'f1']);

    const link = await client.getDownloadLink(model.id);
    expect(link.url).toMatch(new RegExp(`^${service.fileUrl}/`));
    expect(Date.parse(link.expires_at)).toBe(Date.parse(CLOCK_START) + 2500 + 15 * MINUTE);

    const chunks: Buffer[] = [];
    for await (const chunk of client.downloadModel(model.id, { expectedBytes: done.onnx_bytes! })) {
      chunks.push(chunk as Buffer);
    }
    expect(Buffer.concat(chunks).equals(modelBytesAt(model.id, 0, 300_000))).toBe(true);

    const datasets = await allOf(client.listDatasets());
    expect(datasets.map((record) => record.id)).toEqual([dataset.id]);
    const models = await allOf(client.listModels({ status: 'done' }));
    expect(models.map((record) => record.id)).toEqual([model.id]);
    const ofDataset = [];
    for await (const record of client.modelsOfDataset(dataset.id)) ofDataset.push(record.id);
    expect(ofDataset).toEqual([model.id]);
  });

  it('structures with no answers at all, straight to start_training when nothing needs a label', async () => {
    const service = await fixtures.service({ heldOutCount: 0 });
    const client = fixtures.client(service);
    const dataset = await uploadedDataset(client);
    const structured = await client.structure(dataset.id);
    expect(structured.id).toBe(dataset.id);
    expect(await client.getDataset(dataset.id)).toMatchObject({
      status: 'ready',
      next_action: 'start_training',
    });
    expect(await client.nextLabelTask(dataset.id)).toBeNull();
  });
});
