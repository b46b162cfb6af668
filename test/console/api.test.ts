/**
 * The console's server against real local mode: drops through its API run end to end, runs and
 * their history, status and model come back, the model downloads byte for byte, and the API key
 * is in no answer. A folder the run's rules refuse is refused before any file is sent, in the
 * words of `hopper check`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ReadableStreamReadResult } from 'node:stream/web';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { putJson } from '../../lambdas/storage/objects.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import type { ModelDocument } from '../../lambdas/steps/copy-model.js';
import type { RunDetail, RunPage } from '../../local/console/runs.js';
import { runCheckCommand, type CheckVerdict } from '../../local/cli/check.js';
import { inBucketWords } from '../helpers/run-errors.js';
import { DropFolderError, readDropFolder } from '../../local/cli/drop-folder.js';
import { runCommandCaptured } from '../helpers/commands.js';
import { consoleJson, dropThroughConsole, endedRun, folderFiles, useConsole } from '../helpers/console.js';
import { startConsole } from '../../local/console/index.js';
import { startLocalMode } from '../../local/emulator/local-mode.js';
import { startSimulatedService } from '../../local/service/index.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import { RUN_TIMEOUT_MS } from '../helpers/local-mode.js';
import { withTimeout } from '../../testkit/timeout.js';

const fixture = useConsole();
/** A key long and distinct enough that finding it in an answer means it leaked. */
const API_KEY = 'console-test-key-5f1c9a7e';
const REVIEWS = new URL('../../examples/reviews/', import.meta.url).pathname;

type Detail = RunDetail & { record: ModelDocument | null; advice: { meaning: string; todo: string } | null };

/** A status file that holds the API key, as a buggy step might write it. */
function leakyStatus(): RunStatus {
  const now = new Date().toISOString();
  return {
    run_id: 'leaky-run',
    drop: 'leaky',
    state: 'failed',
    hopper_step: 'report',
    step: null,
    next_action: null,
    dataset_id: null,
    model_id: null,
    attempts: 0,
    max_attempts: null,
    labelled: 0,
    files: null,
    labels: null,
    summary: null,
    started_at: now,
    updated_at: now,
    finished_at: now,
    error: { code: 'internal_error', message: `a bug wrote the key ${API_KEY}` },
    model: null,
    paid_model: null,
    config_fingerprint: null,
    waiting_for: null,
    copy_put_off: null,
  };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the console API', () => {
  it('a folder dropped through it runs to success; the run has its history, status and model, which downloads byte for byte', async () => {
    const { local, console } = await fixture.start({ simulated: { apiKey: API_KEY } });
    expect(await dropThroughConsole(console, 'reviews', await folderFiles(REVIEWS))).toEqual({ ok: true });
    const run = await endedRun(console, 'reviews');
    expect(run).toMatchObject({
      drop: 'reviews',
      state: 'succeeded',
      currentState: 'Succeeded',
      error: null,
    });

    const { body: detail, text } = await consoleJson<Detail>(console, `/api/runs/${run.runId}`);
    const entered = detail.events.flatMap((event) =>
      event.type === 'StateEntered' ? [event.state.name] : [],
    );
    expect(entered[0]).toBe('ValidateDrop');
    expect(entered).toContain('CopyModel');
    expect(entered.at(-1)).toBe('Succeeded');
    expect(detail.status).toMatchObject({ run_id: run.runId, state: 'succeeded' });
    expect(detail.record?.model.holdout_n).toEqual(expect.any(Number));
    expect(detail.record?.model.metrics).toEqual(
      expect.objectContaining({ accuracy: expect.any(Number) as number }),
    );
    expect(detail.record?.cost.credits).toBe(1);

    const download = await fetch(
      new URL(`/api/download?key=${encodeURIComponent(detail.model?.onnxKey ?? '')}`, console.url),
    );
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="model.onnx"');
    const bytes = Buffer.from(await download.arrayBuffer());
    const stored = await local.s3.client.send(
      new GetObjectCommand({ Bucket: local.bucket, Key: detail.model?.onnxKey ?? '' }),
    );
    expect(bytes.equals(Buffer.from((await stored.Body?.transformToByteArray()) ?? []))).toBe(true);
    expect(bytes.length).toBe(detail.record?.model.onnx_bytes);

    // The API key: in no state's input or output, nor in any other answer.
    const key = local.simulated?.apiKey ?? '';
    expect(key).toBe(API_KEY);
    expect(text).not.toContain(key);
    for (const path of ['/', '/api/overview', '/api/runs', '/api/service']) {
      const response = await fetch(new URL(path, console.url));
      expect(response.status, path).toBe(200);
      expect(await response.text(), path).not.toContain(key);
    }
  });

  it("the simulated service side shows the run's dataset and model and the credits left", async () => {
    const { local, console } = await fixture.start();
    const credits = local.simulated?.credits() ?? 0;
    await dropThroughConsole(console, 'reviews', await folderFiles(REVIEWS));
    const run = await endedRun(console, 'reviews');
    const { body: detail } = await consoleJson<Detail>(console, `/api/runs/${run.runId}`);
    const { body: service } = await consoleJson<{
      credits: number;
      datasets: { id: string; next_action: string }[];
      models: { id: string; step: number; next_action: string }[];
    }>(console, '/api/service');
    expect(service.credits).toBe(credits - 1);
    expect(service.datasets.map((dataset) => dataset.id)).toContain(detail.status?.dataset_id);
    expect(service.models).toContainEqual(
      expect.objectContaining({ id: detail.status?.model_id, step: 5, next_action: 'download' }),
    );
  });

  it('a failed run (a labels file without a label column) has its error code, message and what docs/errors.md says to do', async () => {
    const { console } = await fixture.start();
    const files = await folderFiles(REVIEWS);
    await dropThroughConsole(console, 'bad-labels', { ...files, 'labels.csv': 'id,answer\n1,positive\n' });
    const run = await endedRun(console, 'bad-labels');
    expect(run.state).toBe('failed');
    expect(run.error?.code).toBe('invalid_labels_file');
    const { body: detail } = await consoleJson<Detail>(console, `/api/runs/${run.runId}`);
    expect(detail.status?.error?.code).toBe('invalid_labels_file');
    expect(detail.summary.error?.message).toBe(detail.status?.error?.message);
    expect(detail.advice?.todo).toBe('Fix the labels file (save it as UTF-8) and upload the drop again.');
    expect(detail.model).toBeNull();
  });

  it('refuses a folder without train.json with the same message as hopper run', async () => {
    const { console } = await fixture.start();
    const folder = await mkdtemp(join(tmpdir(), 'hopper-console-'));
    const named = join(folder, 'no-train');
    try {
      await mkdir(named);
      await writeFile(join(named, 'reviews.csv'), 'text\nfine\n');
      const fromRun = await readDropFolder(named).catch((error: unknown) => error);
      expect(fromRun).toBeInstanceOf(DropFolderError);
      const answer = await dropThroughConsole(console, 'no-train', { 'reviews.csv': 'text\nfine\n' });
      expect(answer).toEqual({
        ok: false,
        status: 400,
        error: (fromRun as Error).message.replace(named, 'no-train'),
      });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it.each([
    ['a train.json the run refuses', { 'reviews.csv': 'text\nfine\n', 'train.json': '{"maxAttempts": 0}' }],
    [
      'a train.json that is not UTF-8',
      { 'reviews.csv': 'text\nfine\n', 'train.json': Buffer.from([0xff, 0xfe]) },
    ],
    ['a file in a sub-folder', { 'reviews.csv': 'text\nfine\n', 'old/a.csv': 'x', 'train.json': '{}' }],
    ['an empty data file', { 'reviews.csv': '', 'train.json': '{}' }],
    ['an empty labels file', { 'reviews.csv': 'text\nfine\n', 'labels.csv': '', 'train.json': '{}' }],
  ])(
    'refuses %s with the code and message of hopper check, before any file is sent',
    async (_, files: Record<string, string | Buffer>) => {
      const { local, console } = await fixture.start();
      const parent = await mkdtemp(join(tmpdir(), 'hopper-console-'));
      cleanups.push(() => rm(parent, { recursive: true, force: true }));
      for (const [name, content] of Object.entries(files)) {
        await mkdir(dirname(join(parent, 'refused', name)), { recursive: true });
        await writeFile(join(parent, 'refused', name), content);
      }
      const checked = await runCommandCaptured(runCheckCommand, [join(parent, 'refused'), '--json'], {});
      const { error } = JSON.parse(checked.stdout) as CheckVerdict;
      expect(checked.code).toBe(1);
      expect(await dropThroughConsole(console, 'refused', files)).toEqual({
        ok: false,
        status: 400,
        error: `${error?.code ?? ''}: ${inBucketWords(error?.message ?? '', join(parent, 'refused'), 'refused')}`,
      });
      const listed = await local.s3.client.send(
        new ListObjectsV2Command({ Bucket: local.bucket, Prefix: 'inbox/refused/' }),
      );
      expect(listed.KeyCount).toBe(0);
    },
  );

  it('pages hundreds of runs newest first, filters by state, and counts each state', async () => {
    const { local, console } = await fixture.start();
    const base = Date.parse('2026-01-01T00:00:00Z');
    const statuses: RunStatus[] = Array.from({ length: 230 }, (_, index) => ({
      run_id: `many-${String(index).padStart(3, '0')}`,
      drop: `many-${String(index).padStart(3, '0')}`,
      state: index % 10 === 0 ? 'failed' : 'succeeded',
      hopper_step: 'report',
      step: 5,
      next_action: 'download',
      dataset_id: null,
      model_id: null,
      attempts: 1,
      max_attempts: 3,
      labelled: 0,
      files: null,
      labels: null,
      summary: null,
      started_at: new Date(base + index * 1000).toISOString(),
      updated_at: new Date(base + index * 1000).toISOString(),
      finished_at: new Date(base + index * 1000 + 500).toISOString(),
      error: index % 10 === 0 ? { code: 'no_credits', message: 'no credit left' } : null,
      model: null,
      paid_model: null,
      config_fingerprint: null,
      waiting_for: null,
      copy_put_off: null,
    }));
    for (const status of statuses)
      await putJson(local.s3.client, local.bucket, statusKey(status.drop), status);

    const first = (await consoleJson<RunPage>(console, '/api/runs?limit=100')).body;
    expect(first.total).toBe(230);
    expect(first.runs).toHaveLength(100);
    expect(first.runs[0]?.runId).toBe('many-229');
    expect(first.counts).toMatchObject({ succeeded: 207, failed: 23, running: 0 });
    const last = (await consoleJson<RunPage>(console, '/api/runs?limit=100&offset=200')).body;
    expect(last.runs.map((run) => run.runId)).toEqual(
      Array.from({ length: 30 }, (_, index) => `many-${String(29 - index).padStart(3, '0')}`),
    );
    const failed = (await consoleJson<RunPage>(console, '/api/runs?state=failed&limit=5')).body;
    expect(failed.total).toBe(23);
    expect(failed.runs.map((run) => run.runId)).toEqual([
      'many-220',
      'many-210',
      'many-200',
      'many-190',
      'many-180',
    ]);
    expect(failed.runs[0]?.error?.code).toBe('no_credits');
  });

  it('streams which runs changed as server-sent events', async () => {
    const { console } = await fixture.start();
    const controller = new AbortController();
    const response = await fetch(new URL('/api/events', console.url), { signal: controller.signal });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const reader = response.body?.getReader();
    if (reader === undefined) throw new Error('no event stream');
    const heard = (async () => {
      let text = '';
      for (;;) {
        const { value, done } = (await reader.read()) as ReadableStreamReadResult<Uint8Array>;
        if (done) return text;
        text += Buffer.from(value).toString('utf8');
        if (text.includes('event: runs')) return text;
      }
    })();
    await dropThroughConsole(console, 'reviews', await folderFiles(REVIEWS));
    const text = await withTimeout(heard, 'no runs event', RUN_TIMEOUT_MS);
    controller.abort();
    expect(text).toMatch(/event: runs\ndata: \{"runIds":\["reviews-[0-9a-f]+"/);
  });

  it('withholds an answer that would contain the API key (were a status file ever to hold it)', async () => {
    const { local, console } = await fixture.start({ simulated: { apiKey: API_KEY } });
    const leaky = leakyStatus();
    await putJson(local.s3.client, local.bucket, statusKey('leaky'), leaky);
    const list = await fetch(new URL('/api/runs', console.url));
    const text = await list.text();
    expect(list.status).toBe(500);
    expect(text).toContain('withheld');
    expect(text).not.toContain(API_KEY);
    // The page still loads, without the runs in it: it asks for them, and shows why they are withheld.
    const page = await fetch(new URL('/', console.url));
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain('"runs":null');
    expect(html).not.toContain(API_KEY);
  });

  it('with another training service (--service-url) it shows no service side, and guards that key too', async () => {
    const other = await startSimulatedService({ ...BRISK_SERVICE, apiKey: API_KEY });
    cleanups.push(() => other.close());
    const local = await startLocalMode({
      service: { url: other.apiUrl, apiKey: other.apiKey },
      waitMs: 10,
      retryPauseMs: 0,
    });
    cleanups.push(() => local.close());
    const console = await startConsole(local, { apiKey: other.apiKey });
    cleanups.push(() => console.close());
    expect(local.simulated).toBeUndefined();

    expect((await fetch(new URL('/api/service', console.url))).status).toBe(404);
    await dropThroughConsole(console, 'reviews', await folderFiles(REVIEWS));
    const run = await endedRun(console, 'reviews');
    expect(run.state).toBe('succeeded');
    const { text } = await consoleJson<Detail>(console, `/api/runs/${run.runId}`);
    expect(text).not.toContain(API_KEY);

    await putJson(local.s3.client, local.bucket, statusKey('leaky'), { ...leakyStatus(), drop: 'leaky' });
    const list = await fetch(new URL('/api/runs', console.url));
    expect(list.status).toBe(500);
    expect(await list.text()).not.toContain(API_KEY);
  });

  it('answers only pages it serves itself: another Host or Origin is refused', async () => {
    const { console } = await fixture.start();
    const { request } = await import('undici');
    const elsewhere = await request(new URL('/api/overview', console.url), {
      headers: { host: 'attacker.example' },
    });
    expect(elsewhere.statusCode).toBe(403);
    await elsewhere.body.dump();
    const crossSite = await request(new URL('/api/drops/check', console.url), {
      method: 'POST',
      headers: { origin: 'http://attacker.example', 'content-type': 'application/json' },
      body: JSON.stringify({ drop: 'x', files: ['train.json'] }),
    });
    expect(crossSite.statusCode).toBe(403);
    await crossSite.body.dump();
  });
});
