/** Suggested decisions, structuring and held-out labels (docs/service-contract.md, B4-B6). */
import { describe, expect, it } from 'vitest';
import {
  HOUR,
  api,
  createDataset,
  datasetAt,
  expectError,
  expectStatus,
  getDataset,
  useHarnesses,
} from '../helpers/service-http.js';
import type { DatasetRecord, Harness, LabelTask, Question } from '../helpers/service-http.js';

const start = useHarnesses();

async function suggest(h: Harness, id: string): Promise<Question[]> {
  const res = await api<{ questions: Question[] }>(h, 'POST', `/v1/datasets/${id}/suggest`);
  const body = expectStatus(res, 200);
  return body.questions;
}

async function structure(h: Harness, id: string, body: unknown = {}) {
  return api<DatasetRecord>(h, 'POST', `/v1/datasets/${id}/structure`, { body });
}

async function nextLabel(h: Harness, id: string) {
  return api<LabelTask>(h, 'GET', `/v1/datasets/${id}/labels/next`);
}

async function postLabel(h: Harness, id: string, task: string, body: unknown) {
  return api<{ remaining: number }>(h, 'POST', `/v1/datasets/${id}/labels/${encodeURIComponent(task)}`, {
    body,
  });
}

describe('POST /v1/datasets/{id}/suggest', () => {
  it('answers 2-3 well-formed questions and moves the dataset to pick_decisions (step 2)', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'read');
    expect(ds).toMatchObject({ step: 2, next_action: 'structure' });
    const questions = await suggest(h, ds.id);
    expect(questions.length).toBeGreaterThanOrEqual(2);
    expect(questions.length).toBeLessThanOrEqual(3);
    expect(new Set(questions.map((q) => q.id)).size).toBe(questions.length);
    for (const q of questions) {
      expect(Object.keys(q).sort()).toEqual(['choices', 'id', 'question', 'suggested']);
      expect(q.question).toEqual(expect.any(String));
      expect(q.choices.length).toBeGreaterThanOrEqual(2);
      expect(q.choices).toContain(q.suggested);
    }
    const after = await getDataset(h, ds.id);
    expect(after).toMatchObject({ status: 'suggested', step: 2, next_action: 'pick_decisions' });
    expect(after.questions).toEqual(questions);
  });

  it('is idempotent at pick_decisions and deterministic across datasets', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'read');
    const first = await suggest(h, ds.id);
    expect(await suggest(h, ds.id)).toEqual(first);
    const other = await datasetAt(h, 'read');
    expect(await suggest(h, other.id)).toEqual(first);
  });

  it('refuses a body other than empty or {} with 400 invalid_request', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'read');
    expectError(
      await api(h, 'POST', `/v1/datasets/${ds.id}/suggest`, { body: { more: 1 } }),
      400,
      'invalid_request',
    );
    expectStatus(await api(h, 'POST', `/v1/datasets/${ds.id}/suggest`, { body: {} }), 200);
  });

  it('answers 409 conflict while uploading, reading, structuring and after structuring', async () => {
    const h = await start({ readingMs: 1000, structuringMs: 1000 });
    const uploading = await datasetAt(h, 'uploading');
    expectError(await api(h, 'POST', `/v1/datasets/${uploading.id}/suggest`), 409, 'conflict');
    const reading = await datasetAt(h, 'reading');
    expect(reading.status).toBe('reading');
    expectError(await api(h, 'POST', `/v1/datasets/${reading.id}/suggest`), 409, 'conflict');
    h.service.clock.advance(1000);
    expectStatus(await structure(h, reading.id), 202);
    expectError(await api(h, 'POST', `/v1/datasets/${reading.id}/suggest`), 409, 'conflict');
    h.service.clock.advance(1000);
    expectError(await api(h, 'POST', `/v1/datasets/${reading.id}/suggest`), 409, 'conflict');
  });

  it('answers 404 not_found for an unknown dataset', async () => {
    const h = await start();
    expectError(
      await api(h, 'POST', '/v1/datasets/00000000-0000-4000-8000-000000000000/suggest'),
      404,
      'not_found',
    );
  });
});

describe('POST /v1/datasets/{id}/structure', () => {
  it('answers 202 structuring/wait (step 2), then step 3 labeling/label_examples', async () => {
    const h = await start({ structuringMs: 2000 });
    const ds = await datasetAt(h, 'read');
    const res = await structure(h, ds.id);
    expect(expectStatus(res, 202)).toMatchObject({
      kind: 'dataset',
      id: ds.id,
      status: 'structuring',
      step: 2,
      next_action: 'wait',
    });
    h.service.clock.advance(1999);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'structuring', step: 2, next_action: 'wait' });
    expectError(await structure(h, ds.id), 409, 'conflict');
    h.service.clock.advance(1);
    expect(await getDataset(h, ds.id)).toMatchObject({
      status: 'labeling',
      step: 3,
      next_action: 'label_examples',
    });
  });

  it('accepts overrides after suggest (a left-out question takes its suggestion)', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'read');
    const questions = await suggest(h, ds.id);
    const q = questions[0]!;
    const other = q.choices.find((c) => c !== q.suggested)!;
    const res = await structure(h, ds.id, { questions: [{ id: q.id, answer: other }] });
    expect(expectStatus(res, 202)).toMatchObject({ status: 'structuring', next_action: 'wait', step: 2 });
  });

  it('accepts an answer for every question', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'read');
    const questions = await suggest(h, ds.id);
    const answers = questions.map((q) => ({ id: q.id, answer: q.choices[q.choices.length - 1] }));
    expectStatus(await structure(h, ds.id, { questions: answers }), 202);
  });

  it('structures straight from structure (no suggest) with {}', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'read');
    expectStatus(await structure(h, ds.id, {}), 202);
  });

  const badAnswers: [string, (qs: Question[]) => unknown][] = [
    [
      'an unknown question id',
      (qs) => ({ questions: [{ id: 'no-such-question', answer: qs[0]!.suggested }] }),
    ],
    [
      'an answer outside the choices',
      (qs) => ({ questions: [{ id: qs[0]!.id, answer: 'definitely-not-a-choice' }] }),
    ],
    [
      'a duplicate question id',
      (qs) => ({
        questions: [
          { id: qs[0]!.id, answer: qs[0]!.suggested },
          { id: qs[0]!.id, answer: qs[0]!.suggested },
        ],
      }),
    ],
    [
      'an extra field on an answer',
      (qs) => ({ questions: [{ id: qs[0]!.id, answer: qs[0]!.suggested, why: 'x' }] }),
    ],
    ['an answer that is not a string', (qs) => ({ questions: [{ id: qs[0]!.id, answer: 1 }] })],
    ['questions that is not an array', (qs) => ({ questions: { id: qs[0]!.id, answer: qs[0]!.suggested } })],
    ['an unknown top-level field', () => ({ questions: [], priority: 'high' })],
  ];
  it.each(badAnswers)(
    'refuses %s with 400 invalid_request and stays at pick_decisions',
    async (_label, makeBody) => {
      const h = await start();
      const ds = await datasetAt(h, 'read');
      const questions = await suggest(h, ds.id);
      expectError(await structure(h, ds.id, makeBody(questions)), 400, 'invalid_request');
      expect(await getDataset(h, ds.id)).toMatchObject({
        status: 'suggested',
        next_action: 'pick_decisions',
      });
    },
  );

  it('answers 409 conflict while uploading and after structuring', async () => {
    const h = await start();
    const uploading = await createDataset(h);
    expectError(await structure(h, uploading.id), 409, 'conflict');
    const labeling = await datasetAt(h, 'labeling');
    expectError(await structure(h, labeling.id), 409, 'conflict');
  });

  it('goes straight to ready/start_training (step 3) when heldOutCount is 0', async () => {
    const h = await start({ heldOutCount: 0 });
    const ds = await datasetAt(h, 'labeling');
    expect(ds).toMatchObject({ status: 'ready', step: 3, next_action: 'start_training' });
    const next = await nextLabel(h, ds.id);
    expect(next.status).toBe(204);
    expect(next.text).toBe('');
  });
});

describe('held-out labels', () => {
  it('serves the same task until answered, counts down, then 204 and ready/start_training', async () => {
    const h = await start({ heldOutCount: 3, labelChoices: ['yes', 'no'] });
    const ds = await datasetAt(h, 'labeling');

    const first = expectStatus(await nextLabel(h, ds.id), 200);
    expect(Object.keys(first).sort()).toEqual(['choices', 'example', 'remaining', 'task']);
    expect(first).toMatchObject({ choices: ['yes', 'no'], remaining: 3 });
    expect(first.task).toEqual(expect.any(String));
    expect(Object.keys(first.example).sort()).toEqual(['id', 'text']);
    expect(typeof first.example.id).toBe('string');
    expect(typeof first.example.text).toBe('string');
    expect(expectStatus(await nextLabel(h, ds.id), 200)).toEqual(first);

    expect(expectStatus(await postLabel(h, ds.id, first.task, { label: 'yes' }), 200)).toEqual({
      remaining: 2,
    });
    // Same label again: idempotent.
    expect(expectStatus(await postLabel(h, ds.id, first.task, { label: 'yes' }), 200)).toEqual({
      remaining: 2,
    });
    // A different label for an answered task: conflict.
    expectError(await postLabel(h, ds.id, first.task, { label: 'no' }), 409, 'conflict');

    const second = expectStatus(await nextLabel(h, ds.id), 200);
    expect(second.task).not.toBe(first.task);
    expect(second.example.id).not.toBe(first.example.id);
    expect(second.remaining).toBe(2);
    expect(expectStatus(await postLabel(h, ds.id, second.task, { label: 'no' }), 200)).toEqual({
      remaining: 1,
    });
    expect(await getDataset(h, ds.id)).toMatchObject({
      status: 'labeling',
      step: 3,
      next_action: 'label_examples',
    });

    const third = expectStatus(await nextLabel(h, ds.id), 200);
    expect(third.remaining).toBe(1);
    expect(expectStatus(await postLabel(h, ds.id, third.task, { label: 'no' }), 200)).toEqual({
      remaining: 0,
    });

    expect(await getDataset(h, ds.id)).toMatchObject({
      status: 'ready',
      step: 3,
      next_action: 'start_training',
    });
    const done = await nextLabel(h, ds.id);
    expect(done.status).toBe(204);
    expect(done.text).toBe('');
    // At 'ready' an answered task still takes its own label, and refuses another.
    expect(expectStatus(await postLabel(h, ds.id, third.task, { label: 'no' }), 200)).toEqual({
      remaining: 0,
    });
    expectError(await postLabel(h, ds.id, third.task, { label: 'yes' }), 409, 'conflict');
  });

  it('refuses a label outside the choices with 400 invalid_label', async () => {
    const h = await start();
    const ds = await datasetAt(h, 'labeling');
    const task = expectStatus(await nextLabel(h, ds.id), 200);
    expectError(await postLabel(h, ds.id, task.task, { label: 'maybe' }), 400, 'invalid_label');
    expect(expectStatus(await nextLabel(h, ds.id), 200).remaining).toBe(task.remaining);
  });

  const badBodies: [string, unknown][] = [
    ['a missing label', {}],
    ['a label that is not a string', { label: 1 }],
    ['an extra field', { label: 'positive', note: 'x' }],
  ];
  it.each(badBodies)('refuses %s with 400 invalid_request', async (_label, body) => {
    const h = await start();
    const ds = await datasetAt(h, 'labeling');
    const task = expectStatus(await nextLabel(h, ds.id), 200);
    expectError(await postLabel(h, ds.id, task.task, body), 400, 'invalid_request');
  });

  it("answers 404 not_found for an unknown task and for another dataset's task", async () => {
    const h = await start();
    const ds = await datasetAt(h, 'labeling');
    const other = await datasetAt(h, 'labeling');
    const foreign = expectStatus(await nextLabel(h, other.id), 200);
    expectError(await postLabel(h, ds.id, 'no-such-task', { label: 'positive' }), 404, 'not_found');
    expectError(await postLabel(h, ds.id, foreign.task, { label: 'positive' }), 404, 'not_found');
    expect(expectStatus(await nextLabel(h, other.id), 200)).toEqual(foreign);
  });

  it('answers 409 conflict to labels/next before structuring ends', async () => {
    const h = await start({ structuringMs: 1000 });
    const read = await datasetAt(h, 'read');
    expectError(await nextLabel(h, read.id), 409, 'conflict');
    expectStatus(await structure(h, read.id), 202);
    expectError(await nextLabel(h, read.id), 409, 'conflict');
  });

  it('answers 404 not_found for an unknown dataset', async () => {
    const h = await start();
    const unknown = '00000000-0000-4000-8000-000000000000';
    expectError(await nextLabel(h, unknown), 404, 'not_found');
    expectError(await postLabel(h, unknown, 'task', { label: 'positive' }), 404, 'not_found');
  });

  it('answers 409 conflict to suggest and structure once the dataset has expired', async () => {
    const h = await start({ datasetTtlMs: HOUR });
    const ds = await datasetAt(h, 'read');
    h.service.clock.advance(HOUR);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'expired', step: 2, next_action: 'expired' });
    expectError(await api(h, 'POST', `/v1/datasets/${ds.id}/suggest`), 409, 'conflict');
    expectError(await structure(h, ds.id), 409, 'conflict');
  });

  it('answers 409 conflict to labels once the dataset has expired', async () => {
    const h = await start({ datasetTtlMs: HOUR });
    const ds = await datasetAt(h, 'labeling');
    const task = expectStatus(await nextLabel(h, ds.id), 200);
    h.service.clock.advance(HOUR);
    expect(await getDataset(h, ds.id)).toMatchObject({ status: 'expired', step: 3, next_action: 'expired' });
    expectError(await nextLabel(h, ds.id), 409, 'conflict');
    expectError(await postLabel(h, ds.id, task.task, { label: 'positive' }), 409, 'conflict');
  });
});
