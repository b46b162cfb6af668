/**
 * Measured clients of the labels benchmark (bench/labels.ts):
 *   labelStep     label_examples answering every held-out example of a fresh dataset by id
 *   bareLabels    the floor: the same examples answered with two bare HTTP round trips each
 *                 (GET labels/next, POST labels/{task}), nothing else
 *   matchLabels   CPU of indexing a labels file and matching every example, by id or by text
 * Set-up (a dataset at label_examples, the labels file in the local S3) happens before measure().
 */
import { Readable } from 'node:stream';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Agent, request } from 'undici';
import { indexOfRecords, type HeldOutExample } from '../../lambdas/drop/labels.js';
import { csvRecords } from '../../lambdas/drop/labels-csv.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import type { Dataset } from '../../lambdas/service-client/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { labelExamplesStep } from '../../lambdas/steps/label-examples.js';
import { maskText } from '../../local/service/domain/index.js';
import type { ClientResult, Measure } from '../harness/protocol.js';
import { connect, endpointsOf, numberArg, stepEnv, type Connected } from './setup.js';

const LABELS = ['positive', 'negative', 'neutral'] as const;
const DATA_FILE = 'reviews.jsonl';

/** Row n of the generated data: an id, and a text with an address and a number the service masks. */
function rowText(n: number): string {
  return `Order ${String(n)} arrived late, write to buyer${String(n)}@example.com or call +1 555 010 ${String(n % 10_000).padStart(4, '0')} about it`;
}
const rowId = (n: number) => `r-${String(n)}`;
const labelOf = (n: number) => LABELS[n % LABELS.length]!;

/** A dataset of `count` rows at label_examples (the service holds out all of them). */
async function datasetAtLabelling(connected: Connected, name: string, count: number): Promise<Dataset> {
  const { client } = connected;
  const data = Buffer.from(
    Array.from({ length: count }, (_, n) => `${JSON.stringify({ id: rowId(n), text: rowText(n) })}\n`).join(
      '',
    ),
  );
  const created = await client.createDataset({ name, files: [{ name: DATA_FILE, bytes: data.length }] });
  await client.uploadFile(created.id, created.files[0]!, () => Readable.from([data]));
  await client.structure(created.id);
  // The benchmark's service reads and structures in no time; a few reads at most.
  for (let attempt = 0; attempt < 200; attempt++) {
    const record = await client.getDataset(created.id);
    if (record.next_action === 'label_examples') return record;
    if (record.next_action !== 'wait')
      throw new Error(`dataset at ${record.next_action}, not label_examples`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`dataset ${created.id} did not reach label_examples`);
}

/** label_examples for a fresh dataset of `count` held-out examples, answered by id from labels.csv. */
export async function labelStep(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const connected = await connect(endpointsOf(args));
  const count = numberArg(args, 'count');
  const drop = `labels-${String(args.round)}`;
  const { bucket, runtime } = connected;
  const csv = ['id,label', ...Array.from({ length: count }, (_, n) => `${rowId(n)},${labelOf(n)}`)].join(
    '\n',
  );
  const key = inboxKey(drop, 'labels.csv');
  await runtime.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: csv }));
  const head = await runtime.s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
  const labels = { name: 'labels.csv', bytes: csv.length, etag: (head.ETag ?? '').replaceAll('"', '') };
  const record = await datasetAtLabelling(connected, drop, count);
  const state: RunState = {
    run: { runId: drop, bucket, drop, key: inboxKey(drop, TRAIN_JSON), etag: 'e', startedAt: '' },
    config: {
      name: drop,
      files: [{ name: DATA_FILE, bytes: record.files[0]?.bytes ?? 0, etag: 'e' }],
      labels,
      encoder: null,
      decisions: 'service',
      maxAttempts: 1,
    },
    dataset: datasetSlot(record, undefined, Date.now()),
  };
  const { result, measurement } = await measure(() => labelExamplesStep.run(state, stepEnv(runtime)));
  if (result.nextAction !== 'start_training') {
    throw new Error(
      `label_examples left the dataset at ${result.nextAction} after ${String(result.labelled)} labels`,
    );
  }
  return { ...measurement, labelled: result.labelled };
}

/** The floor: every example of a fresh dataset answered with two bare round trips. */
export async function bareLabels(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const endpoints = endpointsOf(args);
  const connected = await connect(endpoints);
  const count = numberArg(args, 'count');
  const record = await datasetAtLabelling(connected, `bare-${String(args.round)}`, count);
  const dispatcher = new Agent({ connections: 1 });
  const base = `${endpoints.apiUrl.replace(/\/$/, '')}/v1/datasets/${record.id}/labels`;
  const headers = { authorization: `Bearer ${endpoints.apiKey}`, accept: 'application/json' };
  const { measurement } = await measure(async () => {
    for (let answered = 0; answered <= count; answered++) {
      const next = await request(`${base}/next`, { dispatcher, headers });
      if (next.statusCode === 204) {
        await next.body.dump();
        if (answered !== count)
          throw new Error(`the service had ${String(answered)} tasks, not ${String(count)}`);
        return;
      }
      const task = (await next.body.json()) as { task: string; choices: string[] };
      const answer = await request(`${base}/${task.task}`, {
        dispatcher,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ label: task.choices[0] }),
      });
      if (answer.statusCode !== 200) throw new Error(`POST label answered ${String(answer.statusCode)}`);
      await answer.body.json();
    }
    throw new Error(`the service offered more than ${String(count)} tasks`);
  });
  await dispatcher.close();
  return { ...measurement };
}

/**
 * CPU of indexing a labels file of `count` rows (id, text, label: the user's own texts) and
 * matching `count` held-out examples as the service shows them (masked text): `by` id (the
 * examples carry the rows' ids) or text (they carry none, named `<file>#<row>`, so each is
 * matched by its masked text). The same file both ways: the difference is the matching.
 */
export async function matchLabels(args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  const count = numberArg(args, 'count');
  const byText = args.by === 'text';
  const rows = Array.from({ length: count }, (_, n) => `${rowId(n)},"${rowText(n)}",${labelOf(n)}`);
  const csv = Buffer.from(['id,text,label', ...rows].join('\n'));
  const examples: HeldOutExample[] = Array.from({ length: count }, (_, n) => ({
    id: byText ? `${DATA_FILE}#${String(n + 1)}` : rowId(n),
    text: maskText(rowText(n)),
  }));
  const { result, measurement } = await measure(async () => {
    const index = await indexOfRecords(csvRecords(Readable.from([csv]), 'labels.csv'), 'labels.csv');
    let matched = 0;
    for (const example of examples) if (index.match(example).label !== '') matched++;
    return { matched, patternTests: index.patternTests };
  });
  if (result.matched !== count) throw new Error(`matched ${String(result.matched)} of ${String(count)}`);
  return { ...measurement, patternTests: result.patternTests };
}
