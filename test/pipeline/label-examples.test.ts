import { Readable } from 'node:stream';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { describe, expect, it, vi } from 'vitest';
import { handler } from '../../lambdas/handlers/label-examples.handler.js';
import type { StepEnv, Runtime } from '../../lambdas/runtime/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { DatasetSlot, RunState } from '../../lambdas/core/state/index.js';
import type { LabelTask } from '../../lambdas/service-client/index.js';
import { inboxKey, statusKey } from '../../lambdas/storage/keys.js';
import { labelExamplesStep, labelExamplesStepWith } from '../../lambdas/steps/label-examples.js';
import { validateDropStep } from '../../lambdas/steps/validate-drop.js';
import type { SimulatedServiceOptions } from '../../local/service/index.js';
import { invocationContext, readText, stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { exampleDrop, uniqueDrop } from '../helpers/fixtures.js';
import { runErrorOf } from '../helpers/run-errors.js';

const fixtures = usePipelineFixtures();

const { 'reviews.csv': REVIEWS = '', 'labels.csv': LABELS = '' } = exampleDrop();
const REVIEW_ROWS = parse<{ id: string; text: string }>(REVIEWS, { columns: true });
const LABEL_OF_ID = new Map(
  parse<{ id: string; label: string }>(LABELS, { columns: true }).map((row) => [row.id, row.label]),
);

/** What the service asked and what the step answered, seen through the real client. */
interface Recorded {
  readonly tasks: LabelTask[];
  /** task id -> label submitted */
  readonly submitted: Map<string, string>;
}

interface Prepared {
  readonly runtime: Runtime;
  readonly state: RunState;
  readonly recorded: Recorded;
  readonly service: Awaited<ReturnType<typeof fixtures.service>>;
}

/**
 * A run at label_examples: `files` dropped and validated as the pipeline does, the data files
 * sent to the simulated service and structured, so the dataset holds out examples.
 */
async function atLabelling(
  files: Record<string, string>,
  options: Partial<SimulatedServiceOptions> = {},
): Promise<Prepared> {
  const service = await fixtures.service(options);
  const runtime = fixtures.runtime(service);
  const run = await fixtures.dropped(files, uniqueDrop('label'));
  const config = await validateDropStep.run(run, stepEnv(runtime));

  const client = await runtime.service();
  const created = await client.createDataset({
    name: config.name,
    files: config.files.map((file) => ({ name: file.name, bytes: file.bytes })),
  });
  for (const file of created.files) {
    await client.uploadFile(created.id, file, () => Readable.from([Buffer.from(files[file.name] ?? '')]));
  }
  await client.structure(created.id);
  const record = await client.getDataset(created.id);

  const recorded: Recorded = { tasks: [], submitted: new Map() };
  const nextLabelTask = client.nextLabelTask.bind(client);
  vi.spyOn(client, 'nextLabelTask').mockImplementation(async (datasetId) => {
    const task = await nextLabelTask(datasetId);
    if (task !== null) recorded.tasks.push(task);
    return task;
  });
  const submitLabel = client.submitLabel.bind(client);
  vi.spyOn(client, 'submitLabel').mockImplementation((datasetId, task, label) => {
    recorded.submitted.set(task, label);
    return submitLabel(datasetId, task, label);
  });
  return {
    runtime,
    service,
    recorded,
    state: { ...run, config, dataset: datasetSlot(record, undefined, runtime.now()) },
  };
}

/** An env whose invocation has plenty of time for `roomyChecks` checks, then less than a minute. */
function endingEnv(runtime: Runtime, roomyChecks: number): StepEnv {
  let checks = 0;
  return {
    runtime,
    requestId: 'time-box',
    remainingMs: () => (++checks <= roomyChecks ? 15 * 60_000 : 59_000),
  };
}

describe('label_examples', () => {
  it('answers the bundled example drop by id, every label from labels.csv', async () => {
    const { runtime, state, recorded, service } = await atLabelling(exampleDrop(), { heldOutCount: 12 });
    expect(state.dataset?.nextAction).toBe('label_examples');

    const slot = await labelExamplesStep.run(state, stepEnv(runtime));
    expect(slot).toMatchObject({ nextAction: 'start_training', status: 'ready', labelled: 12 });
    expect(recorded.tasks).toHaveLength(12);
    for (const task of recorded.tasks) {
      expect(recorded.submitted.get(task.task)).toBe(LABEL_OF_ID.get(task.example.id));
    }
    expect(service.requestCount('submitLabel')).toBe(12);
  });

  it('answers by text when the data has no ids: masked e-mails and phone numbers still match', async () => {
    const rows = REVIEW_ROWS.slice(0, 15);
    const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
    const data = ['text', ...rows.map((row) => quote(row.text))].join('\n');
    // The user's own copy: original text (with the e-mails and numbers), spaced differently.
    const labels = [
      'text,label',
      ...rows.map(
        (row) => `${quote(`  ${row.text.replaceAll(' ', '  ')}\n`)},${LABEL_OF_ID.get(row.id) ?? ''}`,
      ),
    ].join('\r\n');
    const { runtime, state, recorded } = await atLabelling(
      { 'reviews.csv': data, 'labels.csv': labels, 'train.json': '{}' },
      { heldOutCount: 15 },
    );

    const slot = await labelExamplesStep.run(state, stepEnv(runtime));
    expect(slot).toMatchObject({ nextAction: 'start_training', labelled: 15 });
    const texts = recorded.tasks.map((task) => task.example.text);
    expect(texts.some((text) => text.includes('[EMAIL]'))).toBe(true);
    expect(texts.some((text) => text.includes('[PHONE]'))).toBe(true);
    for (const task of recorded.tasks) {
      const row = Number(/^reviews\.csv#(\d+)$/.exec(task.example.id)?.[1]);
      expect(recorded.submitted.get(task.task)).toBe(LABEL_OF_ID.get(rows[row - 1]!.id));
    }
  });

  it('stops taking tasks when under a minute is left, and the next invocation finishes', async () => {
    const { runtime, state, recorded } = await atLabelling(exampleDrop(), { heldOutCount: 5 });
    const first = await labelExamplesStep.run(state, endingEnv(runtime, 2));
    expect(first).toMatchObject({ nextAction: 'label_examples', status: 'labeling', labelled: 2 });
    expect(recorded.submitted.size).toBe(2);

    const second = await labelExamplesStep.run({ ...state, dataset: first }, stepEnv(runtime));
    expect(second).toMatchObject({ nextAction: 'start_training', labelled: 5 });
    expect(recorded.submitted.size).toBe(5);
  });

  it('stops taking tasks at the end of its batch time', async () => {
    const { runtime, state } = await atLabelling(exampleDrop(), { heldOutCount: 5 });
    let now = 0;
    const step = labelExamplesStepWith({ batchMs: 1_000, clock: () => (now += 400) - 400 });
    const slot = await step.run(state, stepEnv(runtime));
    // Checks at 400 and 800 ms take a task; at 1200 ms the batch is over.
    expect(slot).toMatchObject({ nextAction: 'label_examples', labelled: 2 });
  });

  it('without a labels file: labels_required, saying how many examples and how to add them', async () => {
    const { runtime, state } = await atLabelling(
      { 'reviews.csv': REVIEWS, 'train.json': '{}' },
      { heldOutCount: 4, labelChoices: ['good', 'bad'] },
    );
    expect(state.config?.labels).toBeNull();
    const error = await runErrorOf(labelExamplesStep.run(state, stepEnv(runtime)));
    expect(error.code).toBe('labels_required');
    expect(error.detail).toBe(
      'the service holds out 4 examples for labelling; add labels.csv with a label column and an id or text ' +
        'column (the labels: good, bad), then upload the drop again, train.json last',
    );
  });

  it('with nothing held out, returns the dataset as it is', async () => {
    const { runtime, state } = await atLabelling(
      { 'reviews.csv': REVIEWS, 'train.json': '{}' },
      { heldOutCount: 0 },
    );
    const slot = await labelExamplesStep.run(
      { ...state, dataset: { ...(state.dataset as DatasetSlot), nextAction: 'label_examples' } },
      stepEnv(runtime),
    );
    expect(slot).toMatchObject({ nextAction: 'start_training', labelled: 0 });
  });

  it('label_missing names the example and its text; the earlier answers stand', async () => {
    const labels = LABELS.split('\n')
      .filter((line) => !line.startsWith('r-0003,'))
      .join('\n');
    const { runtime, state, service } = await atLabelling(exampleDrop({ 'labels.csv': labels }), {
      heldOutCount: 5,
    });
    const error = await runErrorOf(labelExamplesStep.run(state, stepEnv(runtime)));
    expect(error.code).toBe('label_missing');
    expect(error.detail).toBe(
      'no row of labels.csv matches held-out example "r-0003" (text: "The desk lamp arrived early and the quality ' +
        'is excellent."): add a row whose id is "r-0003" with its label',
    );
    expect(service.requestCount('submitLabel')).toBe(2);
  });

  it('invalid_label names the row and the choices, and sends nothing for it', async () => {
    const labels = LABELS.replace('r-0002,neutral', 'r-0002,Neutral');
    const { runtime, state, service } = await atLabelling(exampleDrop({ 'labels.csv': labels }), {
      heldOutCount: 5,
    });
    const error = await runErrorOf(labelExamplesStep.run(state, stepEnv(runtime)));
    expect(error.code).toBe('invalid_label');
    expect(error.detail).toBe(
      'row 3 of labels.csv gives label "Neutral" for held-out example "r-0002" (text: "It is a phone case. Does the ' +
        'job, no more, no less."); the service\'s choices are "positive", "negative", "neutral": fix the label in ' +
        'labels.csv and upload the drop again',
    );
    expect(service.requestCount('submitLabel')).toBe(1);
  });

  it('label_ambiguous names the rows that disagree', async () => {
    // By text: only an example shows that two rows match it (validate_drop refuses an id given two labels).
    const text = '"The yoga mat matches the description, I have no strong feelings about it."';
    const labels = `text,label\n${text},neutral\n${text},positive\n`;
    const { runtime, state } = await atLabelling(exampleDrop({ 'labels.csv': labels }), { heldOutCount: 5 });
    const error = await runErrorOf(labelExamplesStep.run(state, stepEnv(runtime)));
    expect(error.code).toBe('label_ambiguous');
    expect(error.detail).toContain('(row 2 says "neutral"; row 3 says "positive")');
  });

  it('refuses a labels file that changed after validation', async () => {
    const { runtime, state } = await atLabelling(exampleDrop(), { heldOutCount: 5 });
    const { client, bucket } = fixtures.s3();
    await client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: inboxKey(state.run.drop, 'labels.csv'),
        Body: 'id,label\n',
      }),
    );
    const error = await runErrorOf(labelExamplesStep.run(state, stepEnv(runtime)));
    expect(error.code).toBe('drop_changed');
    expect(error.detail).toContain('labels.csv changed or was removed while this run was using it');
  });

  it('as a Lambda handler: returns the slot and writes the status with the count', async () => {
    const { runtime, state } = await atLabelling(exampleDrop(), { heldOutCount: 3 });
    const slot = await handler.withRuntime(runtime)(state, invocationContext());
    expect(slot).toMatchObject({ nextAction: 'start_training', labelled: 3 });
    const { client, bucket } = fixtures.s3();
    const status = JSON.parse(
      (await readText(client, bucket, statusKey(state.run.drop))) ?? 'null',
    ) as unknown;
    expect(status).toMatchObject({
      hopper_step: 'label_examples',
      next_action: 'start_training',
      labelled: 3,
    });
  });
});
