/**
 * The console in a real browser (Chromium through playwright-core, see helpers/browser.ts)
 * against real local mode, at the default window size: a folder dropped through the page runs to
 * success with its graph marked (compact and full), readable, zoomed and panned, a state's input
 * and output open, the model downloads byte for byte; a failed run shows its code, message and
 * what to do; a drop's runs are told apart, and the page shows them as it loads; the API key is on
 * no page and in no answer. The screenshots the README shows are taken here: into docs/images/
 * with HOPPER_UPDATE_SCREENSHOTS=1 (`npm run screenshots`), otherwise into a temporary folder, so
 * that a test run leaves the checkout as it was.
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
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { BROWSER_WAIT_MS, chooseChromium, launchChromium } from '../helpers/browser.js';
import { consoleJson, dropThroughConsole, endedRun, folderFiles, useConsole } from '../helpers/console.js';
import { finished, nextSecond, RUN_TIMEOUT_MS } from '../helpers/local-mode.js';
import { withTimeout } from '../../testkit/timeout.js';

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
async function openPage(): Promise<{
  page: Page;
  answers: () => Promise<string[]>;
  requested: string[];
  refused: string[];
}> {
  const browser = await launchChromium();
  cleanups.push(() => browser.close());
  const page = await browser.context.newPage();
  const requested: string[] = [];
  page.on('request', (request) => requested.push(request.url()));
  const texts: Promise<string>[] = [];
  const refused: string[] = [];
  page.on('response', (response) => {
    const path = new URL(response.url()).pathname;
    if (response.status() >= 400) refused.push(`${String(response.status())} ${path}`);
    // An upload's answer (an ETag) never reaches Playwright's response.text() in this chromium;
    // the API test reads those answers instead.
    if (path === '/api/events' || path === '/api/download' || response.request().method() === 'PUT') return;
    const text = response.text();
    // Read when the test asks (answers()); a page closed before then is no unhandled rejection.
    text.catch(() => undefined);
    texts.push(text);
  });
  return {
    page,
    answers: () => withTimeout(Promise.all(texts), 'answers were not read', BROWSER_WAIT_MS),
    requested,
    refused,
  };
}

/**
 * A browser test's own bound, from the work it waits for: its runs (each bounded by
 * RUN_TIMEOUT_MS, waited for through local mode) and a few page waits after them (each bounded by
 * BROWSER_WAIT_MS). Vitest's 30 s default was less than one run and one page wait together, so on
 * a busy machine a test could time out with every wait inside its own bound.
 */
const BROWSER_TEST_MS = 3 * RUN_TIMEOUT_MS + 4 * BROWSER_WAIT_MS;

/** Resolves once run `runId` has ended in local mode (bounded by RUN_TIMEOUT_MS). */
async function runEnded(local: LocalMode, runId: string): Promise<void> {
  const execution = local.stateMachine.executions().find((candidate) => candidate.name === runId);
  if (execution === undefined) throw new Error(`local mode has no run ${runId}`);
  await finished(local, execution);
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

/** Each node's states (itself and those folded into it), by the state it is drawn as. */
async function graphMembers(page: Page): Promise<Record<string, string[]>> {
  const members: Record<string, string[]> = {};
  for (const node of await page.locator('#graph g.node').all()) {
    const name = (await node.getAttribute('data-state')) ?? '';
    members[name] = ((await node.getAttribute('data-members')) ?? '').split(' ');
  }
  return members;
}

/** The catch edges drawn, as from→to, with those the run took marked. */
async function catchEdges(page: Page): Promise<string[]> {
  const edges: string[] = [];
  for (const edge of await page.locator('#graph path.edge.catch').all()) {
    const [from, to, classes] = await Promise.all(
      ['data-from', 'data-to', 'class'].map((name) => edge.getAttribute(name)),
    );
    edges.push(`${from ?? ''}→${to ?? ''}${classes?.includes('walked') === true ? ' (walked)' : ''}`);
  }
  return edges.sort();
}

/** The smallest size, in screen pixels, at which a label of the graph is drawn. */
function smallestLabel(page: Page): Promise<number> {
  return page.evaluate(`Math.min(...[...document.querySelectorAll('#graph text')].map((text) =>
    parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a))`);
}

describe('the console in a browser', { timeout: BROWSER_TEST_MS }, () => {
  it('drops a folder from the page, follows the run to success on the graph, opens a state, downloads the model', async () => {
    const { local, console } = await fixture.start({ simulated: { apiKey: API_KEY } });
    const { page, answers, requested, refused } = await openPage();
    await page.goto(console.url);
    await page.waitForSelector('body[data-ready=true]');

    const runId = await dropFolder(page, REVIEWS);
    // The run's end from local mode first: the page's wait then counts from there, not from the drop.
    await runEnded(local, runId);
    await page.waitForSelector('#run-title [data-run-state=succeeded]', { timeout: BROWSER_WAIT_MS });
    expect(await page.textContent('#run-title')).toContain('reviews');

    // The compact graph: each Route, Wait, Choice and Pass state folded into the step it serves,
    // every state drawn once; a step the run entered is passed, no other is marked at all.
    const { body: detail } = await consoleJson<RunDetail & { record: ModelDocument | null }>(
      console,
      `/api/runs/${encodeURIComponent(runId)}`,
    );
    const entered = new Set(
      detail.events.flatMap((event) => (event.type === 'StateEntered' ? [event.state.name] : [])),
    );
    const states = local.definition.States;
    const members = await graphMembers(page);
    expect(Object.values(members).flat().sort()).toEqual(Object.keys(states).sort());
    for (const node of Object.keys(members))
      expect(['Task', 'Succeed', 'Fail']).toContain(states[node]?.Type);
    expect(members).toMatchObject({
      CreateDataset: ['CreateDataset', 'RouteDataset'],
      PollModel: ['PollModel', 'WaitForModel'],
      Report: expect.arrayContaining(['Report', 'RunSucceeded', 'DatasetExpired']) as string[],
    });
    for (const [state, mark] of Object.entries(await graphMarks(page))) {
      expect([state, mark]).toEqual([state, entered.has(state) ? 'passed' : 'unreached']);
    }
    // Of the catch edges, the compact view of a run that caught nothing draws only the one that
    // is the only way into its state.
    expect(await catchEdges(page)).toEqual(['Report→ReportFailed']);
    // Readable at the default window size: no label under 12 px on the screen.
    expect(await smallestLabel(page)).toBeGreaterThanOrEqual(12);

    // Zoom and pan.
    await page.click('button[aria-label="zoom in"]');
    expect(await smallestLabel(page)).toBeCloseTo(12 * 1.25, 1);
    await page.click('button[aria-label="zoom in"]');
    const frame = await page.locator('#graph-frame').boundingBox();
    if (frame === null) throw new Error('no graph frame');
    const scrolled = () =>
      page.evaluate<number[]>(
        '[document.querySelector("#graph-frame")].flatMap((f) => [f.scrollLeft, f.scrollTop])',
      );
    const [left = 0, top = 0] = await scrolled();
    await page.mouse.move(frame.x + 5, frame.y + 5);
    await page.mouse.down();
    await page.mouse.move(frame.x - 55, frame.y - 25, { steps: 5 });
    await page.mouse.up();
    expect(await scrolled()).toEqual([left + 60, top + 30]);
    await page.click('button[data-zoom="1"]');
    expect(await smallestLabel(page)).toBeGreaterThanOrEqual(12);

    // The full definition: every state, the run's marked passed.
    await page.click('button[data-graph=full]');
    const marks = await graphMarks(page);
    expect(Object.keys(marks).sort()).toEqual(Object.keys(states).sort());
    for (const [state, mark] of Object.entries(marks)) {
      expect([state, mark]).toEqual([state, entered.has(state) ? 'passed' : 'unreached']);
    }
    expect(marks).toMatchObject({
      ValidateDrop: 'passed',
      CopyModel: 'passed',
      RunSucceeded: 'passed',
      Succeeded: 'passed',
      RunFailed: 'unreached',
    });
    expect(await page.locator('#graph path.edge.catch').count()).toBeGreaterThan(10);
    expect(await page.locator('#graph path.edge.catch.walked').count()).toBe(0);
    await page.click('button[data-graph=compact]');

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
    // Metrics as a table with a header, one row a metric.
    const metrics = detail.record?.model.metrics ?? {};
    expect(await page.locator('#metrics th').allTextContents()).toEqual(['Metric', 'Value']);
    for (const [name, value] of Object.entries(metrics)) {
      expect(await page.textContent(`#metrics tr[data-metric=${name}] td:nth-child(2)`)).toBe(String(value));
    }
    expect(Object.keys(metrics).length).toBeGreaterThan(0);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-onnx')]);
    expect(download.suggestedFilename()).toBe('model.onnx');
    const downloaded = await readFile(await download.path());
    const stored = await local.s3.client.send(
      new GetObjectCommand({ Bucket: local.bucket, Key: output.copy.modelKey }),
    );
    expect(downloaded.equals(Buffer.from((await stored.Body?.transformToByteArray()) ?? []))).toBe(true);

    await mkdir(IMAGES, { recursive: true });
    await page.click('#graph g.node[data-state=CopyModel]');
    await page.evaluate('document.querySelector("#run-title").scrollIntoView()');
    expect(await smallestLabel(page)).toBeGreaterThanOrEqual(12);
    await page.screenshot({ path: join(IMAGES, 'console-run.png') });

    // The API key: on no page, in no answer the page received.
    expect(await page.content()).not.toContain(API_KEY);
    await page.goto(`${console.url}#/`);
    await page.waitForSelector(`tr.run[data-run-id="${runId}"]`);
    expect(await page.content()).not.toContain(API_KEY);
    const received = await answers();
    expect(received.length).toBeGreaterThan(5);
    for (const text of received) expect(text).not.toContain(API_KEY);

    // Everything the page loaded (scripts, styles, dagre, data, its icon) came from the console
    // itself, and nothing it asked for was missing.
    expect(requested).toContain(new URL('/vendor/dagre.min.js', console.url).href);
    expect(refused).toEqual([]);
    expect(await page.getAttribute('link[rel=icon]', 'href')).toBe('/favicon.ico');
    const icon = await fetch(new URL('/favicon.ico', console.url));
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
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
    // Waiting for the model: the step its Wait is folded into is current.
    await page.waitForSelector('#graph g.node[data-state=PollModel][data-mark=current]');
    expect(await graphMarks(page)).toMatchObject({
      ValidateDrop: 'passed',
      StartTraining: 'passed',
      Succeeded: 'unreached',
    });
    await page.click('button[data-graph=full]');
    await page.waitForSelector('#graph g.node[data-state=WaitForModel][data-mark=current]');
    await page.click('button[data-graph=compact]');

    local.simulated?.clock.advance(600_000);
    await runEnded(local, runId);
    await page.waitForSelector('#run-title [data-run-state=succeeded]');
    expect(await graphMarks(page)).toMatchObject({
      PollModel: 'passed',
      CopyModel: 'passed',
      Succeeded: 'passed',
    });
    expect(await page.evaluate('window.hopperTestMark')).toBe('same page');
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#/run/${runId}`);
  });

  it('a folder with a bad labels file: the run fails and the page shows its code, message and what to do', async () => {
    const { local, console } = await fixture.start({ simulated: { apiKey: API_KEY } });
    const parent = await mkdtemp(join(tmpdir(), 'hopper-console-'));
    cleanups.push(() => rm(parent, { recursive: true, force: true }));
    const bad = join(parent, 'bad-labels');
    await mkdir(bad);
    const files = await folderFiles(REVIEWS);
    for (const [name, bytes] of Object.entries(files)) await writeFile(join(bad, name), bytes);
    await writeFile(join(bad, 'labels.csv'), 'id,answer\n1,positive\n');
    // A good run beside it, for the run list's picture.
    expect(await dropThroughConsole(console, 'reviews', files)).toEqual({ ok: true });
    await endedRun(console, 'reviews');

    const { page, answers } = await openPage();
    await page.goto(console.url);
    await page.waitForSelector('body[data-ready=true]');
    const runId = await dropFolder(page, bad);
    await runEnded(local, runId);
    await page.waitForSelector('#run-title [data-run-state=failed]', { timeout: BROWSER_WAIT_MS });
    const { body: detail } = await consoleJson<RunDetail>(console, `/api/runs/${encodeURIComponent(runId)}`);
    expect(await page.textContent('#error-code')).toBe('invalid_labels_file');
    expect(await page.textContent('#error-message')).toBe(detail.status?.error?.message);
    expect(await page.textContent('#error-todo')).toContain(
      'Fix the labels file (save it as UTF-8) and upload the drop again.',
    );
    // The history row of the failed step reads the Lambda error's Cause as lambdas/core/errors/lambda-error.ts does.
    const failure = detail.events.find((event) => event.failure !== undefined)?.failure;
    expect(failure).toMatch(/^invalid_labels_file: /);
    expect(await page.textContent('#history')).toContain(failure);
    // Compact: the failed step, and the one catch edge the run took from it to Report.
    expect(await graphMarks(page)).toMatchObject({
      ValidateDrop: 'failed',
      Report: 'passed',
      RunFailed: 'failed',
    });
    expect(await catchEdges(page)).toEqual(['Report→ReportFailed', 'ValidateDrop→Report (walked)']);
    // Full: the choice that sent the run to RunFailed is not marked as passed.
    await page.click('button[data-graph=full]');
    expect(await graphMarks(page)).toMatchObject({
      ValidateDrop: 'failed',
      Report: 'passed',
      RunSucceeded: 'failed',
      RunFailed: 'failed',
      Succeeded: 'unreached',
    });
    // Each history time on one line, next to a long error.
    const timeLines = await page.evaluate<
      [string, number][]
    >(`[...document.querySelectorAll('#history tbody td:nth-child(2)')]
      .map((cell) => { const range = document.createRange(); range.selectNodeContents(cell);
        return [cell.textContent, range.getClientRects().length]; })`);
    expect(timeLines.length).toBeGreaterThan(5);
    for (const [text, lines] of timeLines) expect([text, lines]).toEqual([text, 1]);

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

  it("tells a drop's runs apart by start time and run id, and shows the runs as the page loads", async () => {
    const { console } = await fixture.start();
    const files = await folderFiles(REVIEWS);
    const runs = [];
    for (const count of [1, 2, 3]) {
      await nextSecond();
      expect(await dropThroughConsole(console, 'reviews', files)).toEqual({ ok: true });
      runs.push(await endedRun(console, 'reviews', count));
    }
    expect(new Set(runs.map((run) => run.runId)).size).toBe(3);

    // The page as it loads, with every request it would make itself refused: it shows the runs
    // from the state the server put into it, as a headless --dump-dom or --screenshot sees it.
    const { page } = await openPage();
    await page.route('**/api/**', (route) => route.abort());
    await page.goto(console.url, { waitUntil: 'load' });
    const dom = await page.content();
    for (const run of runs) expect(dom).toContain(`data-run-id="${run.runId}"`);
    expect(dom).toContain('data-service-id=');

    await page.unrouteAll();
    await page.reload();
    await page.waitForSelector('body[data-ready=true]');
    const rows = await page.evaluate<{ runId: string; started: string; id: string; title: string }[]>(
      `[...document.querySelectorAll('tr.run')].map((row) => ({ runId: row.dataset.runId,
        started: row.querySelector('.started').textContent, id: row.querySelector('.run-id').textContent,
        title: row.querySelector('.run-id').title }))`,
    );
    expect(rows).toEqual(
      runs.reverse().map((run) => ({
        runId: run.runId,
        started: run.startedAt.replace('T', ' ').slice(0, 19),
        id: expect.stringMatching(/^[0-9a-f]{12}$/) as string,
        title: run.runId,
      })),
    );
    expect(new Set(rows.map((row) => row.id)).size).toBe(3);
    for (const run of runs) expect(run.runId).toContain(rows.find((row) => row.runId === run.runId)?.id);
    const header = ['ID', 'Name', 'Status', 'Step', 'next_action'];
    expect(await page.locator('#service-datasets thead th').allTextContents()).toEqual(header);
    expect(await page.locator('#service-models thead th').allTextContents()).toEqual(header);
    expect(await page.locator('#service-models tbody tr').count()).toBe(3);
  });

  it("compares a drop's new model with its previous one on the run page, and says why it was not promoted", async () => {
    const { console } = await fixture.start({
      simulated: {
        trainingMetrics: [
          { accuracy: 0.8, f1: 0.75 },
          { accuracy: 0.85, f1: 0.7 },
        ],
      },
    });
    const files = await folderFiles(REVIEWS);
    const train = JSON.parse(files['train.json']?.toString() ?? '{}') as object;
    const promote = {
      ...files,
      'train.json': JSON.stringify({ ...train, promote: { metric: 'f1', min_delta: 0 } }),
    };
    const runs = [];
    for (const count of [1, 2]) {
      await nextSecond();
      expect(await dropThroughConsole(console, 'reviews', promote)).toEqual({ ok: true });
      runs.push(await endedRun(console, 'reviews', count));
    }
    const { page } = await openPage();
    await page.goto(`${console.url}#/run/${encodeURIComponent(runs[1]?.runId ?? '')}`);
    await page.waitForSelector('#comparison tr[data-compare=f1]', { timeout: BROWSER_WAIT_MS });
    const cells = (name: string) => page.locator(`#comparison tr[data-compare=${name}] td`).allTextContents();
    expect(await page.locator('#comparison th').allTextContents()).toEqual([
      'Metric',
      'This model',
      'Previous',
      'Difference',
    ]);
    expect(await cells('f1')).toEqual(['f1', '0.7', '0.75', '-0.05']);
    expect(await cells('accuracy')).toEqual(['accuracy', '0.85', '0.8', '+0.05']);
    expect(await page.textContent('#comparison caption')).toContain('Previous model ');
    expect(await page.textContent('#promotion')).toMatch(
      /^Not promoted to the drop's current model: f1 0\.7 does not beat 0\.75 of model \S+ by any margin/,
    );

    // The first model had nothing to be compared with: no comparison, promoted.
    await page.goto(`${console.url}#/run/${encodeURIComponent(runs[0]?.runId ?? '')}`);
    await page.waitForSelector('#promotion:text-matches("^Promoted")', { timeout: BROWSER_WAIT_MS });
    expect(await page.textContent('#promotion')).toBe(
      "Promoted to the drop's current model: the drop had no current model.",
    );
    expect(await page.locator('#comparison').isHidden()).toBe(true);
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
    const version = spawnSync(packaged.path, ['--version'], {
      encoding: 'utf8',
      env: { ...process.env, ...packaged.env },
    });
    expect(version.stdout).toMatch(/^Chromium \d+\./);
  });
});
