import { describe, expect, it } from 'vitest';
import { toRunError } from '../../lambdas/core/errors/index.js';
import { MAX_LOOP_ROUNDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import type { DatasetSlot } from '../../lambdas/core/state/index.js';
import type { Dataset, TrainingServiceClient } from '../../lambdas/service-client/index.js';
import { pollDatasetStep } from '../../lambdas/steps/poll-dataset.js';
import type { SimulatedService, SimulatedServiceOptions } from '../../local/service/index.js';
import { HOUR, MINUTE, rejectionOf, trainableDataset, uploadedDataset } from '../client/helpers.js';
import { stepEnv, usePipelineFixtures } from '../helpers/pipeline.js';
import { configOf, stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();
const DAY = 24 * HOUR;

/** A service, a runtime on it, and the runtime's client. */
async function setUp(options: Partial<SimulatedServiceOptions> = {}) {
  const service = await fixtures.service(options);
  const runtime = fixtures.runtime(service);
  const client = await runtime.service();
  return { service, runtime, client };
}

/** Runs poll_dataset on a state whose dataset slot is `slot`. */
async function poll(runtime: ReturnType<typeof fixtures.runtime>, slot: DatasetSlot): Promise<DatasetSlot> {
  const state = stateOf(fixtures.s3().bucket, { config: configOf(), dataset: slot });
  return pollDatasetStep.run(state, stepEnv(runtime));
}

interface Case {
  readonly nextAction: string;
  readonly what: string;
  readonly options?: Partial<SimulatedServiceOptions>;
  readonly reach: (client: TrainingServiceClient, service: SimulatedService) => Promise<Dataset>;
  readonly expected: Partial<DatasetSlot>;
}

const CASES: readonly Case[] = [
  {
    nextAction: 'upload_files',
    what: 'files still to upload',
    reach: (client) => client.createDataset({ name: 'reviews', files: [{ name: 'reviews.csv', bytes: 3 }] }),
    expected: { step: 1, status: 'uploading', waitSeconds: 0, totalPolls: 0 },
  },
  {
    nextAction: 'wait',
    what: 'reading',
    options: { readingMs: MINUTE },
    reach: (client) => uploadedDataset(client),
    // The slot before already waited once (the upload left the dataset reading): the second wait.
    expected: { step: 1, status: 'reading', waitSeconds: 6, polls: 1, totalPolls: 2 },
  },
  {
    nextAction: 'start_over',
    what: 'unreadable data, with the reason',
    options: { unreadable: true },
    reach: (client) => uploadedDataset(client),
    expected: { step: 1, status: 'unreadable', error: 'reviews.csv: unreadable (simulated)', waitSeconds: 0 },
  },
  {
    nextAction: 'structure',
    what: 'read',
    reach: (client) => uploadedDataset(client),
    expected: { step: 2, status: 'read', waitSeconds: 0 },
  },
  {
    nextAction: 'pick_decisions',
    what: 'suggested',
    reach: async (client) => {
      const dataset = await uploadedDataset(client);
      await client.suggest(dataset.id);
      return dataset;
    },
    expected: { step: 2, status: 'suggested', waitSeconds: 0 },
  },
  {
    nextAction: 'wait',
    what: 'structuring',
    options: { structuringMs: MINUTE },
    reach: async (client) => client.structure((await uploadedDataset(client)).id),
    expected: { step: 2, status: 'structuring', waitSeconds: 6, polls: 1, totalPolls: 2 },
  },
  {
    nextAction: 'label_examples',
    what: 'held-out examples to label',
    reach: async (client) => client.structure((await uploadedDataset(client)).id),
    expected: { step: 3, status: 'labeling', waitSeconds: 0 },
  },
  {
    nextAction: 'start_training',
    what: 'ready',
    reach: (client) => trainableDataset(client),
    expected: { step: 3, status: 'ready', waitSeconds: 0 },
  },
  {
    nextAction: 'expired',
    what: 'past expires_at',
    reach: async (client, service) => {
      const dataset = await uploadedDataset(client);
      service.clock.advance(7 * DAY);
      return dataset;
    },
    expected: { step: 2, status: 'expired', waitSeconds: 0 },
  },
];

describe('poll_dataset', () => {
  it.each(CASES)('routes on $nextAction ($what)', async ({ nextAction, options, reach, expected }) => {
    const { service, runtime, client } = await setUp(options);
    const dataset = await reach(client, service);
    const before = datasetSlot(dataset, undefined, service.clock.now());

    const slot = await poll(runtime, before);

    expect(slot).toMatchObject({ ...expected, id: dataset.id, nextAction, expiresAt: dataset.expires_at });
  });

  it('backs off while the service stays at wait, then stops waiting and keeps the count', async () => {
    const { service, runtime, client } = await setUp({ readingMs: HOUR });
    let slot = datasetSlot(await uploadedDataset(client), undefined, service.clock.now());
    // The upload left the dataset reading: its slot already holds the first wait.
    const waits: number[] = [slot.waitSeconds];
    for (let i = 0; i < 12; i++) {
      slot = await poll(runtime, slot);
      waits.push(slot.waitSeconds);
    }
    expect(waits).toEqual([2, 6, 18, 54, 60, 60, 60, 60, 60, 60, 60, 60, 60]);
    expect(slot).toMatchObject({ nextAction: 'wait', polls: 12, totalPolls: 13 });

    service.clock.advance(HOUR);
    slot = await poll(runtime, slot);
    expect(slot).toMatchObject({ nextAction: 'structure', waitSeconds: 0, polls: 0, totalPolls: 13 });
  });

  it('never sleeps past the expiry of the dataset', async () => {
    // Reading outlasts the dataset: the clamp is what keeps the run from sleeping through expiry.
    const { service, runtime, client } = await setUp({ readingMs: DAY, datasetTtlMs: 10 * MINUTE });
    const uploaded = await uploadedDataset(client);
    const backedOff: DatasetSlot = {
      ...datasetSlot(uploaded, undefined, service.clock.now()),
      waitSeconds: 60,
      polls: 20,
      totalPolls: 20,
    };
    expect((await poll(runtime, backedOff)).waitSeconds).toBe(60);

    service.clock.advance(10 * MINUTE - 5_500);
    expect((await poll(runtime, backedOff)).waitSeconds).toBe(5);
    service.clock.advance(5_100);
    expect((await poll(runtime, backedOff)).waitSeconds).toBe(1);
    service.clock.advance(400);
    expect(await poll(runtime, backedOff)).toMatchObject({ nextAction: 'expired', waitSeconds: 0 });
  });

  it('stops the run with history_limit once the run has gone round its loops the most times', async () => {
    const { service, runtime, client } = await setUp({ readingMs: HOUR });
    const uploaded = datasetSlot(await uploadedDataset(client), undefined, service.clock.now());
    const nearLimit = { ...uploaded, waitSeconds: 120, polls: 40, totalPolls: MAX_LOOP_ROUNDS_PER_RUN - 1 };

    const last = await poll(runtime, nearLimit);
    expect(last.totalPolls).toBe(MAX_LOOP_ROUNDS_PER_RUN);
    const error = toRunError(await rejectionOf(poll(runtime, last)));

    expect(error).toMatchObject({ code: 'history_limit', retryable: false, name: 'Hopper.Failed' });
    expect(error.message).toContain('drop train.json again');
  });

  it('a next_action Hopper does not know fails the run, naming the value', async () => {
    const { service, runtime, client } = await setUp({
      readingMs: MINUTE,
      renameNextActions: { structure: 'celebrate' },
    });
    const uploaded = datasetSlot(await uploadedDataset(client), undefined, service.clock.now());
    service.clock.advance(MINUTE);

    const error = toRunError(await rejectionOf(poll(runtime, uploaded)));

    expect(error).toMatchObject({ code: 'unsupported_next_action', retryable: false });
    expect(error.message).toContain('celebrate');
  });
});
