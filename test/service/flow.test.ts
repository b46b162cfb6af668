/**
 * Every next_action with its step number (docs/service-contract.md, B3), observed along whole walks through the
 * flow, each state entered by a real request or a clock move.
 */
import { describe, expect, it } from 'vitest';
import {
  HOUR,
  api,
  createDataset,
  createModel,
  expectStatus,
  getDataset,
  getModel,
  labelAll,
  uploadAndComplete,
  useHarnesses,
} from '../helpers/service-http.js';
import type { Harness, TestFile } from '../helpers/service-http.js';

const start = useHarnesses();

type Seen = [step: number, nextAction: string];

async function datasetState(h: Harness, id: string): Promise<Seen> {
  const d = await getDataset(h, id);
  return [d.step, d.next_action];
}

async function modelState(h: Harness, id: string): Promise<Seen> {
  const m = await getModel(h, id);
  return [m.step, m.next_action];
}

describe('next_action and step along the flow', () => {
  it('dataset: upload_files 1, wait 1, structure 2, pick_decisions 2, wait 2, label_examples 3, start_training 3', async () => {
    const h = await start({ readingMs: 1000, structuringMs: 1000, heldOutCount: 2 });
    const files: TestFile[] = [{ name: 'a.csv', content: 'id,text\n1,one\n2,two\n3,three\n' }];
    const seen: Seen[] = [];
    const ds = await createDataset(h, files);
    seen.push([ds.step, ds.next_action]);
    await uploadAndComplete(h, ds, files);
    seen.push(await datasetState(h, ds.id));
    h.service.clock.advance(1000);
    seen.push(await datasetState(h, ds.id));
    expectStatus(await api(h, 'POST', `/v1/datasets/${ds.id}/suggest`), 200);
    seen.push(await datasetState(h, ds.id));
    expectStatus(await api(h, 'POST', `/v1/datasets/${ds.id}/structure`, { body: {} }), 202);
    seen.push(await datasetState(h, ds.id));
    h.service.clock.advance(1000);
    seen.push(await datasetState(h, ds.id));
    expect(await labelAll(h, ds.id)).toHaveLength(2);
    seen.push(await datasetState(h, ds.id));
    expect(seen).toEqual([
      [1, 'upload_files'],
      [1, 'wait'],
      [2, 'structure'],
      [2, 'pick_decisions'],
      [2, 'wait'],
      [3, 'label_examples'],
      [3, 'start_training'],
    ]);
  });

  it('dataset: start_over 1 when unreadable', async () => {
    const h = await start({ readingMs: 1000 });
    const files: TestFile[] = [{ name: 'a.txt', content: 'hello\n' }];
    const ds = await createDataset(h, files);
    await uploadAndComplete(h, ds, files);
    h.service.clock.advance(1000);
    expect(await datasetState(h, ds.id)).toEqual([1, 'start_over']);
  });

  it('dataset: expired keeps the step it had (1, 2 and 3)', async () => {
    const h = await start({ datasetTtlMs: HOUR, readingMs: 0, structuringMs: 0, heldOutCount: 1 });
    const files: TestFile[] = [{ name: 'a.csv', content: 'text\nhello\n' }];
    const atStep1 = await createDataset(h, files);
    const atStep2 = await createDataset(h, files);
    await uploadAndComplete(h, atStep2, files);
    const atStep3 = await createDataset(h, files);
    await uploadAndComplete(h, atStep3, files);
    expectStatus(await api(h, 'POST', `/v1/datasets/${atStep3.id}/structure`, { body: {} }), 202);
    expect(await datasetState(h, atStep2.id)).toEqual([2, 'structure']);
    expect(await datasetState(h, atStep3.id)).toEqual([3, 'label_examples']);
    h.service.clock.advance(HOUR);
    expect(await datasetState(h, atStep1.id)).toEqual([1, 'expired']);
    expect(await datasetState(h, atStep2.id)).toEqual([2, 'expired']);
    expect(await datasetState(h, atStep3.id)).toEqual([3, 'expired']);
  });

  it('model: wait 4 (queued, training), retry 4, download 5, none 5', async () => {
    const h = await start({
      heldOutCount: 0,
      readingMs: 0,
      structuringMs: 0,
      queuedMs: 100,
      trainingMs: 100,
      failTrainings: 1,
      modelFilesTtlMs: HOUR,
    });
    const files: TestFile[] = [{ name: 'a.csv', content: 'text\nhello\n' }];
    const ds = await createDataset(h, files);
    await uploadAndComplete(h, ds, files);
    expectStatus(await api(h, 'POST', `/v1/datasets/${ds.id}/structure`, { body: {} }), 202);
    expect(await datasetState(h, ds.id)).toEqual([3, 'start_training']);

    const seen: Seen[] = [];
    const failing = expectStatus(await createModel(h, ds.id), 201);
    seen.push([failing.step, failing.next_action]);
    h.service.clock.advance(100);
    seen.push(await modelState(h, failing.id));
    h.service.clock.advance(100);
    seen.push(await modelState(h, failing.id));
    const retried = expectStatus(await createModel(h, ds.id), 201);
    h.service.clock.advance(200);
    seen.push(await modelState(h, retried.id));
    h.service.clock.advance(HOUR);
    seen.push(await modelState(h, retried.id));
    expect(seen).toEqual([
      [4, 'wait'],
      [4, 'wait'],
      [4, 'retry'],
      [5, 'download'],
      [5, 'none'],
    ]);
  });
});
