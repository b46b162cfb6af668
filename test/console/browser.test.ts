/**
 * The console in a real browser (Debian's chromium through playwright-core) against real local
 * mode: a folder dropped through the page runs to success with its graph marked, a state's
 * input and output open, the model downloads byte for byte; a failed run shows its code,
 * message and what to do; the API key is on no page and in no answer. The screenshots the
 * README shows are taken here: into docs/images/ with HOPPER_UPDATE_SCREENSHOTS=1 (`npm run
 * screenshots`), otherwise into a temporary folder, so that a test run leaves the checkout as
 * it was.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelDocument } from '../../lambdas/steps/copy-model.js';
import type { RunDetail } from '../../local/console/runs.js';
import { BROWSER_WAIT_MS, chooseChromium, launchChromium } from '../helpers/browser.js';
import { consoleJson, dropThroughConsole, folderFiles, useConsole } from '../helpers/console.js';
import { withTimeout } from '../helpers/timeout.js';

const fixture = useConsole();
const API_KEY = 'console-browser-key-0b7e41d2';
const REVIEWS = fileURLToPath(new URL('../../examples/reviews', import.meta.url));
const IMAGES =
  process.env.HOPPER_UPDATE_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../docs/images/', import.meta.url))
    : join(tmpdir(), 'hopper-console-screenshots');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A page of a fresh browser, with the text of every answer it receives (but the ones below) kept. */
async function openPage(): Promise<{ page: Page; answers: () => Promise<string[]>; requested: string[] }> {
  const browser = await launchChromium();
  cleanups.push(() => browser.close());
  const page = await browser.context.newPage();
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  const texts: Promise<string>[] = [];
  page.on('response', (response) => {
    const path = new URL(response.url()).pathname;
    // An upload's answer (an ETag) never reaches Playwright's response.text() in this chromium;
    // the API test reads those answers instead.
    if (path === '/api/events' || path === '/api/download' || response.request().method() === 'PUT') return;
    texts.push(response.text());
  });
  return {
    page,
    answers: () => withTimeout(Promise.all(texts), 'answers were not read', BROWSER_WAIT_MS),
    requested,
  };
}

/** Chooses `folder` with the page's folder input; resolves once the page shows its run. */
async function dropFolder(page: Page, folder: string): Promise<string> {
  await page.setInputFiles('#folder-input', folder);
  await page.waitForURL(/#\/run\/.+/, { timeout: BROWSER_WAIT_MS });
  return decodeURIComponent(new URL(page.url()).hash.replace('#/run/', ''));
}

async function graphMarks(page: Page): Promise<Record<string, string>> {
  const marks: Record<string, string> = {};
  for (const node of await page.locator('#graph g.node').all()) {
    marks[(await node.getAttribute('data-state')) ?? ''] = (await node.getAttribute('data-mark')) ?? '';
  }
  return marks;
}

describe('the console in a browser', () => {
  it('drops a folder from the page, follows the run to success on the graph, opens a state, downloads the model', async () => {
    const { local, console } = await fixture.start({ simulated: { apiKey: API_KEY } });
    const { page, answers, requested } = await openPage();
    await page.goto(console.url);
    await page.waitForSelector('body[data-ready=true]');

    const runId = await dropFolder(page, REVIEWS);
    await page.waitForSelector('#run-title [data-run-state=succeeded]', { timeout: BROWSER_WAIT_MS });
    expect(await page.textContent('#run-title')).toContain('reviews');

    // Every state the run entered is marked passed; no other is marked at all.
    const { body: detail } = await consoleJson<RunDetail & { record: ModelDocument | null }>(
      console,
      `/api/runs/${encodeURIComponent(runId)}`,
    );
    const entered = new Set(
      detail.events.flatMap((event) => (event.type === 'StateEntered' ? [event.state.name] : [])),
    );
    const marks = await graphMarks(page);
    expect(Object.keys(marks).sort()).toEqual(Object.keys(local.definition.States).sort());
    for (const [state, mark] of Object.entries(marks)) {
      expect([state, mark]).toEqual([state, entered.has(state) ? 'passed' : 'unreached']);
    }
    expect(marks).toMatchObject({
      ValidateDrop: 'passed',
      CopyModel: 'passed',
      Succeeded: 'passed',
      RunFailed: 'unreached',
    });

    // A state's input and output, on click.
    await page.click('#graph g.node[data-state=CopyModel]');
    expect(await page.textContent('#state-io-title')).toBe('CopyModel');
    const input = JSON.parse((await page.textContent('#state-input')) ?? '') as {
      run: { drop: string };
      copy?: unknown;
    };
    expect(input.run.drop).toBe('reviews');
    expect(input.copy).toBeUndefined();
    const output = JSON.parse((await page.textContent('#state-output')) ?? '') as {
      copy: { modelKey: string };
    };
    expect(output.copy.modelKey).toMatch(/^models\/reviews\/[^/]+\/model\.onnx$/);

    // The model: its facts, and model.onnx downloaded from the page, byte for byte the bucket's.
    expect(detail.record?.model.holdout_n).toEqual(expect.any(Number));
    expect(Number(await page.textContent('[data-fact=holdout_n]'))).toBe(detail.record?.model.holdout_n);
    expect(Number(await page.textContent('[data-fact=onnx_bytes]'))).toBe(detail.record?.model.onnx_bytes);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-onnx')]);
    expect(download.suggestedFilename()).toBe('model.onnx');
    const downloaded = await readFile(await download.path());
    const stored = await local.s3.client.send(
      new GetObjectCommand({ Bucket: local.bucket, Key: output.copy.modelKey }),
    );
    expect(downloaded.equals(Buffer.from((await stored.Body?.transformToByteArray()) ?? []))).toBe(true);

    await mkdir(IMAGES, { recursive: true });
    await page.locator('header').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(IMAGES, 'console-run.png') });

    // The API key: on no page, in no answer the page received.
    expect(await page.content()).not.toContain(API_KEY);
    await page.goto(`${console.url}#/`);
    await page.waitForSelector(`tr.run[data-run-id="${runId}"]`);
    expect(await page.content()).not.toContain(API_KEY);
    const received = await answers();
    expect(received.length).toBeGreaterThan(5);
    for (const text of received) expect(text).not.toContain(API_KEY);

    // Everything the page loaded (scripts, styles, dagre, data) came from the console itself.
    expect(requested).toContain(new URL('/vendor/dagre.min.js', console.url).href);
    expect(requested.filter((url) => !url.startsWith(console.url))).toEqual([]);
  });

  it('follows a running run live: its current state is marked, and it turns to succeeded with no reload', async () => {
    // Training takes 10 minutes of the service's clock, until the test moves the clock on.
    const { local, console } = await fixture.start({ waitMs: 100, simulated: { trainingMs: 600_000 } });
    const { page } = await openPage();
    await page.goto(console.url);
    await page.waitForSelector('body[data-ready=true]');
    await page.evaluate('window.hopperTestMark = "same page"');
    const runId = await dropFolder(page, REVIEWS);
    await page.waitForSelector('#run-title [data-run-state=running]');
    await page.waitForSelector('#graph g.node[data-state=WaitForModel][data-mark=current]');
    expect(await graphMarks(page)).toMatchObject({
      ValidateDrop: 'passed',
      StartTraining: 'passed',
      Succeeded: 'unreached',
    });

    local.simulated?.clock.advance(600_000);
    await page.waitForSelector('#run-title [data-run-state=succeeded]');
    expect(await graphMarks(page)).toMatchObject({
      WaitForModel: 'passed',
      CopyModel: 'passed',
      Succeeded: 'passed',
    });
    expect(await page.evaluate('window.hopperTestMark')).toBe('same page');
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#/run/${runId}`);
  });

  it('a folder with a bad labels file: the run fails and the page shows its code, message and what to do', async () => {
    const { console } = await fixture.start({ simulated: { apiKey: API_KEY } });
    const parent = await mkdtemp(join(tmpdir(), 'hopper-console-'));
    cleanups.push(() => rm(parent, { recursive: true, force: true }));
    const bad = join(parent, 'bad-labels');
    await mkdir(bad);
    const files = await folderFiles(REVIEWS);
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(bad, name), bytes);
    await writeFile(join(bad, 'labels.csv'), 'id,answer\n1,positive\n');
    // A good run beside it, for the run list's picture.
    expect(await dropThroughConsole(console, 'reviews', files)).toEqual({ ok: true });

    const { page, answers } = await openPage();
    await page.goto(console.url);
    await page.waitForSelector('body[data-ready=true]');
    const runId = await dropFolder(page, bad);
    await page.waitForSelector('#run-title [data-run-state=failed]', { timeout: BROWSER_WAIT_MS });
    const { body: detail } = await consoleJson<RunDetail>(console, `/api/runs/${encodeURIComponent(runId)}`);
    expect(await page.textContent('#error-code')).toBe('invalid_labels_file');
    expect(await page.textContent('#error-message')).toBe(detail.status?.error?.message);
    expect(await page.textContent('#error-todo')).toContain('Fix the header row of the labels file.');
    // The history row of the failed step reads the Lambda error's Cause as lambdas/run/lambda-error.ts does.
    const failure = detail.events.find((event) => event.failure !== undefined)?.failure;
    expect(failure).toMatch(/^invalid_labels_file: /);
    expect(await page.textContent('#history')).toContain(failure);
    expect(await graphMarks(page)).toMatchObject({
      ValidateDrop: 'failed',
      Report: 'passed',
      RunFailed: 'failed',
    });

    await page.goto(`${console.url}#/`);
    await page.waitForSelector(`tr.run[data-run-id="${runId}"] .error-code`);
    await page.waitForSelector('tr.run[data-drop=reviews] [data-run-state=succeeded]', {
      timeout: BROWSER_WAIT_MS,
    });
    expect(await page.textContent(`tr.run[data-run-id="${runId}"] .error-code`)).toBe('invalid_labels_file');
    await mkdir(IMAGES, { recursive: true });
    await page.screenshot({ path: join(IMAGES, 'console-runs.png') });

    // The filter shows the failed run alone.
    await page.click('button[data-filter=failed]');
    await page.locator('tr.run').nth(1).waitFor({ state: 'detached' });
    expect(await page.locator('tr.run').count()).toBe(1);
    expect(await page.getAttribute('tr.run', 'data-run-id')).toBe(runId);
    for (const text of await answers()) expect(text).not.toContain(API_KEY);
  });

  it('refuses a folder without train.json with the same words as hopper run, and a dragged file; uploads nothing', async () => {
    const { local, console } = await fixture.start();
    const parent = await mkdtemp(join(tmpdir(), 'hopper-console-'));
    cleanups.push(() => rm(parent, { recursive: true, force: true }));
    const folder = join(parent, 'no-train');
    await mkdir(folder);
    await writeFile(join(folder, 'reviews.csv'), 'text\nfine\n');
    const { page } = await openPage();
    await page.goto(console.url);
    await page.waitForSelector('body[data-ready=true]');
    await page.setInputFiles('#folder-input', folder);
    await page.waitForSelector('#drop-message.error');
    expect(await page.textContent('#drop-message')).toBe(
      'no-train has no train.json, which starts a run: add one ({} is valid, see docs/drop-format.md)',
    );

    // A file dragged onto the page, not a folder: refused, and nothing is uploaded either.
    const dataTransfer = await page.evaluateHandle(
      '(() => { const t = new DataTransfer(); t.items.add(new File(["text"], "reviews.csv")); return t; })()',
    );
    await page.dispatchEvent('body', 'dragover', { dataTransfer });
    expect(await page.getAttribute('#dropzone', 'class')).toContain('over');
    await page.dispatchEvent('body', 'drop', { dataTransfer });
    await page.waitForFunction(
      'document.querySelector("#drop-message").textContent.startsWith("Drop a folder")',
    );
    expect(await page.textContent('#drop-message.error')).toBe(
      'Drop a folder (the one holding the data files and train.json), not a file.',
    );
    expect(local.stateMachine.executions()).toEqual([]);
  });
});

describe("the tests' browser", () => {
  it('is HOPPER_CHROMIUM when set, else an installed one, else the Chromium inside the npm package', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'hopper-browser-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const installed = join(folder, 'chromium');
    await writeFile(installed, '#!/bin/sh\n', { mode: 0o755 });
    const notExecutable = join(folder, 'chrome.txt');
    await writeFile(notExecutable, 'not a browser');

    expect(await chooseChromium({ HOPPER_CHROMIUM: installed }, [])).toMatchObject({
      path: installed,
      from: 'HOPPER_CHROMIUM',
    });
    await expect(chooseChromium({ HOPPER_CHROMIUM: notExecutable }, [installed])).rejects.toThrow(
      `HOPPER_CHROMIUM=${notExecutable} is not an executable file`,
    );
    const missing = join(folder, 'missing');
    expect(await chooseChromium({}, [missing, notExecutable, folder, installed])).toMatchObject({
      path: installed,
      from: 'installed',
    });
    const packaged = await chooseChromium({}, [missing]);
    expect(packaged.from).toBe('@sparticuz/chromium');
    expect(packaged.path).toMatch(/node_modules\/\.cache\/hopper-chromium\/[\d.]+\/chromium$/);
    const version = spawnSync(packaged.path, ['--version'], { encoding: 'utf8' });
    expect(version.stdout).toMatch(/^Chromium \d+\./);
  });
});
