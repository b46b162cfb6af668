/**
 * Expiry edges, end to end in local mode (the simulated service over HTTP, the synthesized state
 * machine with the real handlers): an upload URL that expires mid-upload, a download link that
 * expires mid-copy, and a dataset that expires while labelling. The model is saved whole, or the
 * run fails with a clear code before any credit; never a silent loss. docs/reliability.md,
 * "Expiry edges".
 */
import { describe, expect, it } from 'vitest';
import { FILES_EXPIRY_MARGIN_SECONDS } from '../../lambdas/core/schedule/index.js';
import { LAMBDA_CLIENT_OPTIONS } from '../../lambdas/runtime/index.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import type { FaultRule } from '../../local/service/index.js';
import { fastClock, type FastClock } from '../helpers/fast-clock.js';
import {
  dropAndRun,
  type FinishedRun,
  serviceGet,
  simulatedOf,
  statesEntered,
  useLocalMode,
} from '../helpers/local-mode.js';
import { expectFailed, expectSaved } from '../helpers/local-runs.js';
import { REVIEWS_CSV, reviewsDrop } from '../helpers/fixtures.js';

const fixture = useLocalMode();

describe('an upload URL that expires mid-upload', () => {
  it.each<[string, FaultRule[]]>([
    ['the PUT is answered 403 url_expired', [{ endpoint: 'fileUpload', kind: 'expire', count: 1 }]],
    [
      'the PUT fails, and its URL has expired by the time it is sent again',
      [
        { endpoint: 'fileUpload', kind: '503', count: 1 },
        { endpoint: 'fileUpload', kind: 'expire', count: 1 },
      ],
    ],
  ])(
    '%s: a fresh URL is fetched, the file sent whole, the run succeeds with one credit',
    async (_, faults) => {
      const local = await fixture.start({ simulated: { faults } });
      const service = local.simulated!;
      const run = await dropAndRun(local, 'upload-expiry', reviewsDrop());

      expect(service.faultCount('expire')).toBe(1);
      await expectSaved(local, run);
      // The file went whole to a fresh URL: the service read every row (4 ids, all labelled).
      expect(service.fileDigest(run.status?.dataset_id ?? '', 'reviews.csv')?.bytes).toBe(
        Buffer.byteLength(REVIEWS_CSV),
      );
      expect(service.requestCount('fileUpload')).toBe(faults.length + 1);
      expect(service.requestCount('startTraining')).toBe(1);
      expect(service.credits()).toBe(9);
    },
  );
});

describe('a download link that expires mid-copy', () => {
  it('the resume (Range) is answered 403 url_expired: a fresh link, the copy resumes, the model byte-exact', async () => {
    const local = await fixture.start({
      simulated: {
        faults: [
          // The first GET is cut a third of the way; the resume's link has expired by then.
          { endpoint: 'fileDownload', kind: 'cut', count: 1, cutAfterBytes: 100_000 },
          { endpoint: 'fileDownload', kind: 'expire', count: 1 },
        ],
      },
    });
    const service = local.simulated!;
    const run = await dropAndRun(local, 'download-expiry', reviewsDrop());

    expect(service.faultCount('cut')).toBe(1);
    expect(service.faultCount('expire')).toBe(1);
    await expectSaved(local, run);
    // Cut, refused as expired, resumed from the fresh link: three GETs, two links.
    expect(service.requestCount('fileDownload')).toBe(3);
    expect(service.requestCount('getDownloadLink')).toBe(2);
    expect(service.credits()).toBe(9);
  });
});

describe('a dataset that expires while labelling', () => {
  it.each([
    ['before the first label is asked for', 'LabelExamples'],
    ['between two labels', 'submitLabel'],
  ])('%s: dataset_expired, saying what to do, before any credit', async (_, when) => {
    const hour = 60 * 60 * 1000;
    const local = await fixture.start({ simulated: { datasetTtlMs: hour } });
    const service = local.simulated!;
    let poll: NodeJS.Timeout | undefined;
    if (when === 'LabelExamples') {
      local.stateMachine.on('event', (_execution, event) => {
        if (event.type === 'StateEntered' && event.state.name === 'LabelExamples')
          service.clock.advance(hour);
      });
    } else {
      // The first label's answer is held back (the label is taken); the clock passes the expiry meanwhile.
      service.configure({ faults: [{ endpoint: 'submitLabel', kind: 'stall', count: 1, stallMs: 300 }] });
      poll = setInterval(() => {
        if (service.faultCount('stall') > 0) {
          clearInterval(poll);
          service.clock.advance(hour);
        }
      }, 1);
    }
    let run: FinishedRun;
    try {
      run = await dropAndRun(local, 'labelling-expiry', reviewsDrop());
    } finally {
      clearInterval(poll);
    }
    if (when === 'submitLabel') expect(service.requestCount('submitLabel')).toBe(1);

    const status = await expectFailed(local, run, 'dataset_expired');
    expect(status).toMatchObject({ next_action: 'expired', attempts: 0, model_id: null });
    expect(status.error?.message).toContain(`dataset ${status.dataset_id ?? ''} expired`);
    expect(status.error?.message).toContain('drop the folder again');
    expect(statesEntered(run.events)).toContain('LabelExamples');
    expect(statesEntered(run.events)).not.toContain('StartTraining');
    expect(service.requestCount('startTraining')).toBe(0);
    expect(service.credits()).toBe(10);
  });
});

/** The model's record, straight from the simulated service. */
function serviceModel(local: LocalMode, id: string): Promise<{ files_expire_at: string | null }> {
  return serviceGet(simulatedOf(local), `/v1/models/${id}`);
}

/** Local mode on the fast clock: every Wait moves the service's clock by its seconds. */
async function startOnFastClock(modelFilesTtlMs: number): Promise<{ local: LocalMode; clock: FastClock }> {
  const clock = fastClock();
  const local = await fixture.start({
    simulated: { manualClockStart: '2026-01-01T00:00:00.000Z', modelFilesTtlMs },
    waitMs: 1,
    wrapTask: clock.wrapTask,
    now: clock.now,
    // The client's own retries without their real pauses: only the service's clock matters here.
    clientOptions: { ...LAMBDA_CLIENT_OPTIONS, backoffBaseMs: 1, backoffCapMs: 5 },
  });
  clock.attach(local.simulated!.clock);
  return { local, clock };
}

/**
 * No wait that began before files_expire_at less the margin (by a whole second: waits are whole
 * seconds) ends after it: a sleep between two copies never skips the time left to copy. Inside
 * the margin, each wait is at most half of what is left.
 */
function expectNoSleepPastMargin(copies: readonly number[], filesExpireAt: number): void {
  const latest = filesExpireAt - FILES_EXPIRY_MARGIN_SECONDS * 1000;
  for (const [index, at] of copies.slice(1).entries()) {
    const before = copies[index] ?? 0;
    if (before <= latest - 1000) expect(at).toBeLessThanOrEqual(latest);
    else if (before < filesExpireAt - 2000)
      expect(at - before).toBeLessThanOrEqual((filesExpireAt - before) / 2);
  }
}

describe('a paid model whose copy keeps failing (files_expire_at approaching)', () => {
  it('the copy is put off and tried again until the download recovers: the model saved, one credit', async () => {
    const hour = 3600_000;
    const { local, clock } = await startOnFastClock(2 * hour);
    const service = local.simulated!;
    // Far more failures than one copy's retries (client and state machine) get through.
    service.configure({ faults: [{ endpoint: 'getDownloadLink', kind: '503', count: 40 }] });
    const run = await dropAndRun(local, 'copy-recovers', reviewsDrop());

    expect(run.status?.error ?? null).toBeNull();
    expect(service.faultCount('503')).toBe(40);
    const { modelId } = await expectSaved(local, run);
    expect(statesEntered(run.events)).toContain('WaitToCopy');
    // The run's summary counts each copy put off with its ModelCopied and WaitToCopy.
    expect(run.status?.summary?.state_transitions).toBe(statesEntered(run.events).length);
    expect(clock.copies.length).toBeGreaterThan(2);
    const filesExpireAt = Date.parse((await serviceModel(local, modelId)).files_expire_at ?? '');
    // Every copy while the files were there, none after the last safe moment.
    expect(clock.copies.every((at) => at < filesExpireAt - FILES_EXPIRY_MARGIN_SECONDS * 1000)).toBe(true);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(9);
  });

  it('the service unreachable until the files expire: model_files_gone saying why, no sleep past the margin', async () => {
    const { local, clock } = await startOnFastClock(20 * 60_000);
    const service = local.simulated!;
    let modelId = '';
    let filesExpireAt = Number.NaN;
    local.stateMachine.on('event', (_execution, event) => {
      if (event.type !== 'StateEntered' || event.state.name !== 'CopyModel' || modelId !== '') return;
      const model = (event.state.input as { model: { id: string; filesExpireAt: string } }).model;
      modelId = model.id;
      filesExpireAt = Date.parse(model.filesExpireAt);
      // From the first copy on, the service answers nothing but 503.
      service.configure({ faults: [{ endpoint: '*', kind: '503' }] });
    });
    const run = await dropAndRun(local, 'copy-never', reviewsDrop());
    service.configure({ faults: [] });

    const status = await expectFailed(local, run, 'model_files_gone');
    expect(status.model_id).toBe(modelId);
    expect(status.error?.message).toContain(`every copy of model ${modelId} from `);
    expect(status.error?.message).toContain('service unavailable (simulated)');
    expect(status.error?.message).toContain('drop train.json again');
    // One piece of advice: no note that the model could still be adopted.
    expect(status.error?.message).not.toContain('adopts it');
    // Bounded: a few dozen copies over the files' 20 minutes, the last one once they were gone.
    expect(clock.copies.length).toBeGreaterThan(5);
    expect(clock.copies.length).toBeLessThan(40);
    expect(clock.copies.at(-1)).toBeGreaterThanOrEqual(filesExpireAt);
    expect(clock.copies.slice(0, -1).every((at) => at < filesExpireAt)).toBe(true);
    expectNoSleepPastMargin(clock.copies, filesExpireAt);
    expect(service.requestCount('startTraining')).toBe(1);
  });
});
