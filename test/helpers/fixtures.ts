/**
 * The test data the suites share: drops (the files a user puts into inbox/<drop>/), and the
 * config, slots and state a run carries between its steps. The builders take `overrides`, so a
 * test names the fields it is about and leaves the rest to one place.
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { noWait } from '../../lambdas/core/schedule/index.js';
import type { DatasetSlot, ModelSlot, RunConfig, RunState } from '../../lambdas/core/state/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';

/** A drop name no other test of the file uses. */
export function uniqueDrop(prefix = 'drop'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** A CSV the service reads: header `id,text`, one row per text. */
export function csv(texts: readonly string[]): string {
  return (
    ['id,text', ...texts.map((text, index) => `r${index + 1},"${text.replaceAll('"', '""')}"`)].join('\n') +
    '\n'
  );
}

/** Six short reviews, two with personal data in them (a phone number, an email address). */
export const SAMPLE_TEXTS = [
  'Great product, works as described',
  'Terrible support, call me at +1 415-555-0100',
  'Arrived late but fine',
  'Write to jane@example.com for the refund',
  'Would buy again',
  'Broken on arrival',
];

/** SAMPLE_TEXTS as the CSV the service reads (configOf's reviews.csv is its size). */
export const SAMPLE_CSV = csv(SAMPLE_TEXTS);

/** Rows with ids, and a labels file answering every one of them. */
export const REVIEWS_CSV = [
  'id,text',
  'r1,The desk lamp arrived early and the quality is excellent.',
  'r2,The rain jacket is loud and the handle came loose.',
  'r3,It is a phone case. Does the job.',
  'r4,The yoga mat matches the description.',
].join('\n');
export const LABELS_BY_ID = ['id,label', 'r1,positive', 'r2,negative', 'r3,neutral', 'r4,neutral'].join('\n');
/** The drop's data files: the reviews and their labels (add train.json). */
export const REVIEWS_FILES = { 'reviews.csv': REVIEWS_CSV, 'labels.csv': LABELS_BY_ID } as const;

/** A data file and no labels file (add train.json): for a service holding out no examples. */
export const UNLABELLED_FILES = { 'reviews.csv': 'id,text\nr1,good\nr2,bad\nr3,fine\n' } as const;

/** The folder of the bundled example drop (examples/reviews). */
export const EXAMPLE_FOLDER = fileURLToPath(new URL('../../examples/reviews/', import.meta.url));

/** The bundled example drop: its files by name, as text, with `overrides`. */
export function exampleDrop(overrides: Record<string, string> = {}): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(EXAMPLE_FOLDER)) {
    files[name] = readFileSync(join(EXAMPLE_FOLDER, name), 'utf8');
  }
  return { ...files, ...overrides };
}

/** A drop of `count` held-out examples: a data file of rows with ids, and a labels file answering each. */
export function labelledDrop(count: number): Record<string, string> {
  const ids = Array.from({ length: count }, (_, index) => `r${String(index + 1)}`);
  const choices = ['positive', 'negative', 'neutral'];
  return {
    'reviews.csv': ['id,text', ...ids.map((id) => `${id},Review number ${id} of a product.`)].join('\n'),
    'labels.csv': ['id,label', ...ids.map((id, index) => `${id},${choices[index % 3] ?? 'neutral'}`)].join(
      '\n',
    ),
    'train.json': '{}',
  };
}

/** Folder `name` in `parent` holding `files` (names may have folders: `more/b.csv`). */
export async function writeDropFolder(
  parent: string,
  name: string,
  files: Readonly<Record<string, string | Buffer>>,
): Promise<string> {
  const folder = join(parent, name);
  for (const [file, content] of Object.entries(files)) {
    await mkdir(dirname(join(folder, file)), { recursive: true });
    await writeFile(join(folder, file), content);
  }
  return folder;
}

/** A drop that trains when nothing goes wrong; `trainJson` is its train.json. */
export function reviewsDrop(trainJson = '{}'): Record<string, string> {
  return { ...REVIEWS_FILES, [TRAIN_JSON]: trainJson };
}

/** train.json's config with its defaults, one data file (reviews.csv) and `overrides`. */
export function configOf(overrides: Partial<RunConfig> = {}): RunConfig {
  return {
    name: 'reviews',
    files: [{ name: 'reviews.csv', bytes: Buffer.byteLength(SAMPLE_CSV), etag: 'etag-reviews' }],
    labels: null,
    encoder: null,
    decisions: 'service',
    maxAttempts: 3,
    ...overrides,
  };
}

/** A dataset slot at upload_files, step 1, not waiting; `overrides` for what a test is about. */
export function datasetSlotOf(overrides: Partial<DatasetSlot> = {}): DatasetSlot {
  return {
    id: 'd1',
    step: 1,
    status: 'uploading',
    nextAction: 'upload_files',
    expiresAt: '2026-01-08T00:00:00.000Z',
    error: null,
    labelled: 0,
    ...noWait(),
    ...overrides,
  };
}

/**
 * A model slot of a first training, queued with the service's default encoder, not waiting and
 * knowing nothing of the account's earlier models; `overrides` for what a test is about.
 */
export function modelSlotOf(overrides: Partial<ModelSlot> = {}): ModelSlot {
  return {
    id: 'm1',
    step: 4,
    status: 'queued',
    nextAction: 'wait',
    version: 1,
    encoder: 'enc-small',
    attempts: 1,
    retryLeft: true,
    filesExpireAt: null,
    filesRetentionSeconds: null,
    expectedFinish: null,
    onnxBytes: null,
    error: null,
    ...noWait(),
    ...overrides,
  };
}

/**
 * A state of a run in `bucket` with the given slots; its run is of a fresh drop unless `run`
 * names one (the run id and key follow the drop).
 */
export function stateOf(
  bucket: string,
  slots: Omit<RunState, 'run'> = {},
  run: Partial<Omit<RunState['run'], 'bucket'>> = {},
): RunState {
  const drop = run.drop ?? uniqueDrop();
  return {
    run: {
      runId: `${drop}-run`,
      bucket,
      drop,
      key: inboxKey(drop, TRAIN_JSON),
      etag: 'etag-train',
      startedAt: '2026-01-01T00:00:00.000Z',
      ...run,
    },
    ...slots,
  };
}
