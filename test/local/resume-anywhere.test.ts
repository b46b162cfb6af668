/**
 * Issue 28: `hopper local --data-dir` stopped at any step before training (while the files
 * upload, while the service reads the dataset, while it is structured, while decisions are
 * picked, while labels are posted), then started again. The restart marks the run interrupted
 * naming the step it was in, and says `hopper retry <drop>` resumes it from its dataset;
 * following that advice goes on from wherever the dataset stands (only the files not completed
 * are sent) and trains the drop: one dataset at the service, one credit. Local mode is stopped
 * with close(), which lets a handler in flight settle (it may write its status, as a Lambda
 * would); test/reliability/restart-advice.test.ts kills the process (-9) mid-upload instead.
 */
import { describe, expect, it } from 'vitest';
import type { StepName } from '../../lambdas/core/state/index.js';
import { readStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { runRetryCommand } from '../../local/cli/retry.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import type { EndpointName, SimulatedServiceOptions } from '../../local/service/index.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { LABELS_BY_ID, REVIEWS_FILES } from '../helpers/fixtures.js';
import {
  finished,
  nextExecution,
  serviceList,
  simulatedOf,
  stateReached,
  useKeptLocalMode,
} from '../helpers/local-mode.js';
import { putDrop } from '../helpers/pipeline.js';

const kept = useKeptLocalMode();
const CREDITS = 10;
/** Longer than the test: a stalled answer, or a dataset phase, that the stop cuts off. */
const FOREVER_MS = 600_000;

/** Three data files, so a stop mid-upload leaves some completed and one not. */
function filesOf(trainJson: Record<string, unknown>): Record<string, string> {
  return {
    ...REVIEWS_FILES,
    'labels.csv': `${LABELS_BY_ID}\nm1,positive\nm2,negative\ne1,positive\ne2,negative\n`,
    'more.csv': 'id,text\nm1,Fine value for the price\nm2,Stopped working after a week\n',
    'extra.csv': 'id,text\ne1,Five stars\ne2,Would not recommend\n',
    [TRAIN_JSON]: JSON.stringify(trainJson),
  };
}

interface Stop {
  /** The step the run is in when local mode stops, as the interrupted message names it. */
  readonly step: StepName;
  /** The state the run has entered when it stops. */
  readonly state: string;
  readonly trainJson?: Record<string, unknown>;
  /** The service's knobs for the first start: what holds the run there. */
  readonly simulated: Partial<SimulatedServiceOptions>;
  /** Stop once the service has seen this many requests of the endpoint. */
  readonly after?: { readonly endpoint: EndpointName; readonly count: number };
}

const stall = (endpoint: EndpointName) => ({
  faults: [{ endpoint, kind: 'stall' as const, count: 1, stallMs: FOREVER_MS }],
});

const STOPS: readonly Stop[] = [
  // Two files completed, the third's bytes sent but its answer never comes.
  {
    step: 'upload_files',
    state: 'UploadFiles',
    simulated: stall('fileUpload'),
    after: { endpoint: 'completeFile', count: 2 },
  },
  { step: 'poll_dataset', state: 'WaitForDataset', simulated: { readingMs: FOREVER_MS } },
  {
    step: 'structure',
    state: 'Structure',
    simulated: stall('structure'),
    after: { endpoint: 'structure', count: 1 },
  },
  {
    step: 'pick_decisions',
    state: 'PickDecisions',
    trainJson: { decisions: 'suggested' },
    simulated: stall('structure'),
    after: { endpoint: 'structure', count: 1 },
  },
  {
    step: 'label_examples',
    state: 'LabelExamples',
    simulated: stall('submitLabel'),
    after: { endpoint: 'submitLabel', count: 1 },
  },
];

/** Resolves once the service has seen `count` requests of `endpoint` (bounded). */
async function requestsSeen(local: LocalMode, endpoint: EndpointName, count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (simulatedOf(local).requestCount(endpoint) < count) {
    if (Date.now() > deadline) throw new Error(`the service never saw ${String(count)} ${endpoint}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('hopper local stopped before training, then hopper retry', { timeout: 90_000 }, () => {
  it.each(STOPS)(
    'stopped in $state: interrupted at $step, and hopper retry trains the drop from the same dataset: one dataset, one credit',
    async (stop) => {
      const dataDir = await kept.dataDir();
      const files = filesOf(stop.trainJson ?? {});
      const first = await kept.start(dataDir, { simulated: { credits: CREDITS, ...stop.simulated } });
      const started = nextExecution(first, inboxKey('k1', TRAIN_JSON));
      await putDrop(first.s3.client, first.bucket, 'k1', files);
      const execution = await started.execution;
      await stateReached(first, execution.name, stop.state);
      if (stop.after !== undefined) await requestsSeen(first, stop.after.endpoint, stop.after.count);
      await first.close();

      const second = await kept.start(dataDir, { simulated: { credits: CREDITS } });
      const simulated = simulatedOf(second);
      simulated.clock.advance(FOREVER_MS);
      expect(second.interrupted).toEqual(['k1']);
      const interrupted = await readStatus(second.s3.client, second.bucket, 'k1');
      const dataset = interrupted?.dataset_id ?? '';
      expect(interrupted?.error?.message).toContain(`local mode stopped while this run was at ${stop.step},`);
      expect(interrupted?.error?.message).toContain(`hopper retry k1 resumes it from its dataset ${dataset}`);

      const resumed = nextExecution(second, inboxKey('k1', TRAIN_JSON));
      const retry = await runCommandCaptured(runRetryCommand, ['k1'], settingsOf(second));
      expect(retry).toMatchObject({ code: 0, stderr: '' });
      const run = await finished(second, await resumed.execution, resumed.events);
      expect(run.status?.error ?? null).toBeNull();
      expect(run.outcome.status).toBe('SUCCEEDED');
      expect(run.status?.dataset_id).toBe(dataset);
      const datasets = await serviceList<{ id: string }>(simulated, 'datasets');
      expect(datasets.map((record) => record.id)).toEqual([dataset]);
      expect(simulated.credits()).toBe(CREDITS - 1);
      // Only the file the stop left pending is sent again.
      if (stop.step === 'upload_files') expect(simulated.requestCount('fileUpload')).toBe(1);
      expect(simulated.requestCount('createDataset')).toBe(0);
    },
  );

  it('stopped while the files upload, with a data file changed since: hopper retry refuses to send other files to that dataset', async () => {
    const dataDir = await kept.dataDir();
    const first = await kept.start(dataDir, { simulated: { credits: CREDITS, ...stall('fileUpload') } });
    const started = nextExecution(first, inboxKey('k1', TRAIN_JSON));
    await putDrop(first.s3.client, first.bucket, 'k1', filesOf({}));
    await stateReached(first, (await started.execution).name, 'UploadFiles');
    await requestsSeen(first, 'completeFile', 2);
    await first.close();

    const second = await kept.start(dataDir, { simulated: { credits: CREDITS } });
    await putDrop(second.s3.client, second.bucket, 'k1', {
      'more.csv': 'id,text\nm1,Longer now than it was\n',
    });
    const resumed = nextExecution(second, inboxKey('k1', TRAIN_JSON));
    expect(await runCommandCaptured(runRetryCommand, ['k1'], settingsOf(second))).toMatchObject({ code: 0 });
    const run = await finished(second, await resumed.execution, resumed.events);
    expect(run.status?.error?.code).toBe('not_resumable');
    expect(run.status?.error?.message).toContain(
      "the drop's files are no longer the ones it was created with",
    );
    expect(simulatedOf(second).requestCount('fileUpload')).toBe(0);
  });
});
