/**
 * Input at its edges (issue 22), end to end through local mode: a symbolic link out of a drop
 * folder given to `hopper run`, labels.csv with line ends that change midway and with 1,000,000
 * CRLF rows (100,000 in `npm test`; the million in `npm run test:reliability`,
 * HOPPER_RELIABILITY=full), a dataset name of emoji, and files that are not UTF-8. Each either trains, or ends
 * with its error code before a dataset is created (so no credit is spent): the drops run at once
 * in one local mode, the link through hopper run's own code path. It prints the figures
 * docs/reliability.md records (how long reading the 1e6-row file takes).
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { runDatasetName } from '../../lambdas/service-client/index.js';
import { runRunCommand } from '../../local/cli/run.js';
import { runCommandCaptured } from '../helpers/commands.js';
import { dropAndRun, startBriskLocalMode, statesEntered, type FinishedRun } from '../helpers/local-mode.js';

const CREDITS = 10;
/** Held-out examples per dataset: enough that r021 of the mixed file is one. */
const HELD_OUT = 25;
const FULL = process.env.HOPPER_RELIABILITY === 'full';
/** The big labels.csv's rows: the streaming reader is the same at either size; the time is not. */
const LABEL_ROWS = FULL ? 1_000_000 : 100_000;
/** Bounds: one run (the 1e6-row file is read twice on a busy two-core machine), the whole test. */
const RUN_MS = 120_000;
const TEST_MS = 180_000;

const ids = Array.from({ length: 30 }, (_, index) => `r${String(index + 1).padStart(3, '0')}`);
const DATA = ['id,text', ...ids.map((id, index) => `${id},Review number ${String(index)} of the lamp.`)].join(
  '\n',
);
/** Two CRLF rows, then LF rows: read before as one record from r002 on (label_missing r021). */
const MIXED_LABELS = `id,label\r\n${ids
  .map((id, index) => `${id},${index % 2 === 0 ? 'positive' : 'negative'}${index < 2 ? '\r\n' : '\n'}`)
  .join('')}`;
/** A label for every id of DATA, among LABEL_ROWS other rows, CRLF throughout. */
function millionRowLabels(): Buffer {
  const rows = Array.from(
    { length: LABEL_ROWS },
    (_, index) => `r${String(index).padStart(3, '0')},neutral\r\n`,
  );
  return Buffer.from(`id,label\r\n${rows.join('')}`);
}

const drops: Record<string, Readonly<Record<string, string | Buffer>>> = {
  mixed: { 'reviews.csv': DATA, 'labels.csv': MIXED_LABELS, 'train.json': '{}' },
  million: { 'reviews.csv': DATA, 'labels.csv': millionRowLabels(), 'train.json': '{}' },
  emoji100: {
    'reviews.csv': DATA,
    'labels.csv': MIXED_LABELS,
    'train.json': JSON.stringify({ name: '😀'.repeat(100) }),
  },
  emoji150: {
    'reviews.csv': DATA,
    'labels.csv': MIXED_LABELS,
    'train.json': JSON.stringify({ name: '😀'.repeat(150) }),
  },
  latin1TrainJson: {
    'reviews.csv': DATA,
    'labels.csv': MIXED_LABELS,
    'train.json': Buffer.from('{"name":"caf\xe9"}', 'latin1'),
  },
  latin1Labels: {
    'reviews.csv': DATA,
    'labels.csv': Buffer.from(`${MIXED_LABELS}r031,tr\xe8s bien\n`, 'latin1'),
    'train.json': '{}',
  },
};

let local: LocalMode | undefined;
const runs = new Map<string, Promise<FinishedRun>>();

beforeAll(async () => {
  local = await startBriskLocalMode({ simulated: { credits: CREDITS, heldOutCount: HELD_OUT } });
  const started = local;
  for (const [name, files] of Object.entries(drops)) {
    const run = dropAndRun(started, `edges-${name}`, files, RUN_MS);
    run.catch(() => undefined);
    runs.set(name, run);
  }
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(runs.values());
  await local?.close();
});

async function run(name: string): Promise<FinishedRun> {
  return (await runs.get(name)) ?? Promise.reject(new Error(`no run ${name}`));
}

/** The run ended with `code` at ValidateDrop: no dataset, no training, no credit. */
function expectRefusedAtValidate(finished: FinishedRun, code: string, mention: string): void {
  expect(finished.status).toMatchObject({ state: 'failed', dataset_id: null, model_id: null });
  expect(finished.status?.error?.code).toBe(code);
  expect(finished.status?.error?.message).toContain(mention);
  expect(statesEntered(finished.events)).not.toContain('CreateDataset');
}

it(
  'hopper run refuses a folder with a symbolic link out of it, naming the link, before local mode starts or anything is sent',
  async () => {
    const work = await mkdtemp(join(tmpdir(), 'hopper-edges-'));
    try {
      const folder = join(work, 'linked');
      await mkdir(folder);
      await writeFile(join(folder, 'train.json'), '{}');
      await writeFile(join(folder, 'reviews.csv'), DATA);
      await writeFile(join(work, 'secret.txt'), 'not for the service');
      await symlink(join(work, 'secret.txt'), join(folder, 'extra.csv'));
      const result = await runCommandCaptured(runRunCommand, [folder], {});
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `hopper run: linked_files: ${folder} holds symbolic links: "extra.csv" -> "${join(work, 'secret.txt')}". Hopper sends only the files inside the drop folder and follows no link out of it: replace each link by a copy of what it points to, or move it out of the folder\n`,
      );
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  },
  TEST_MS,
);

it.each([
  ['labels.csv whose line ends change from CRLF to LF (r021, on line 22, is held out)', 'mixed'],
  [
    `a labels.csv of ${LABEL_ROWS.toLocaleString('en-US')} CRLF rows, read whole by ValidateDrop and again by LabelExamples`,
    'million',
  ],
])(
  'trains on %s',
  async (_, name) => {
    const finished = await run(name);
    expect(finished.status).toMatchObject({ state: 'succeeded', error: null, labelled: HELD_OUT });
    const steps = finished.status?.summary?.steps;
    const bytes = drops[name]?.['labels.csv']?.length ?? 0;
    console.log(
      `input edges: ${name} labels.csv (${String(bytes)} bytes): validate_drop ${String(steps?.validate_drop?.ms)} ms, label_examples ${String(steps?.label_examples?.ms)} ms`,
    );
  },
  TEST_MS,
);

it(
  'counts the dataset name in UTF-16 units as the service does: 100 emoji train, 150 are invalid_train_json',
  async () => {
    const trained = await run('emoji100');
    expect(trained.status?.state).toBe('succeeded');
    const service = await (local as LocalMode).service();
    // The run's tag follows the name, which is cut to fit 200 units, between two emoji.
    expect((await service.getDataset(trained.status?.dataset_id ?? '')).name).toBe(
      runDatasetName('😀'.repeat(100), trained.status?.run_id ?? ''),
    );
    expect(trained.status?.dataset_name).toMatch(/^(😀){90} · run [0-9a-f]{12}$/u);
    expectRefusedAtValidate(
      await run('emoji150'),
      'invalid_train_json',
      '"name" must be a string of 1 to 200',
    );
  },
  TEST_MS,
);

it(
  'refuses train.json and labels.csv that are not UTF-8, naming the byte',
  async () => {
    expectRefusedAtValidate(await run('latin1TrainJson'), 'invalid_train_json', 'offset 12 (0xe9)');
    const labelsOffset = Buffer.byteLength(`${MIXED_LABELS}r031,tr`);
    expectRefusedAtValidate(
      await run('latin1Labels'),
      'invalid_labels_file',
      `offset ${String(labelsOffset)} (0xe8)`,
    );
  },
  TEST_MS,
);

it(
  'spent one credit for each drop that trained and created no dataset for the others',
  async () => {
    await Promise.allSettled(runs.values());
    const simulated = (local as LocalMode).simulated;
    expect(simulated?.credits()).toBe(CREDITS - 3);
    expect(simulated?.requestCount('createDataset')).toBe(3);
  },
  TEST_MS,
);
